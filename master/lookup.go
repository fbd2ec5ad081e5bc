package master

import (
	"fmt"
	"net/http"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// driverWorkerAddress is the API address of the worker that runs (or last
// ran) a driver, for the log proxy.
func (c *core) driverWorkerAddress(id string) (string, error) {
	if !c.leading() {
		return "", c.notLeader()
	}
	d := c.findDriver(id)
	if d == nil {
		return "", notFound("driver", id)
	}
	wid := d.rec.WorkerID
	if d.worker != nil {
		wid = d.worker.rec.ID
	}
	return c.workerAddress(wid, "driver "+id)
}

// executorWorkerAddress is the API address of the worker of an executor.
func (c *core) executorWorkerAddress(appID string, execID int) (string, error) {
	if !c.leading() {
		return "", c.notLeader()
	}
	a := c.findApp(appID)
	if a == nil {
		return "", notFound("application", appID)
	}
	workerID, found := "", false
	if e := a.executors[execID]; e != nil {
		workerID, found = e.worker.rec.ID, true
	}
	for _, f := range a.finished {
		if !found && f.ID == execID {
			workerID, found = f.WorkerID, true
		}
	}
	if !found {
		return "", notFound("executor", fmt.Sprintf("%s/%d", appID, execID))
	}
	return c.workerAddress(workerID, fmt.Sprintf("executor %s/%d", appID, execID))
}

func (c *core) workerAddress(workerID, what string) (string, error) {
	w := c.workers[workerID]
	if workerID == "" || w == nil {
		return "", httpx.Coded(http.StatusNotFound, wire.CodeLogsUnreachable, "%s has no worker the master knows of, so its logs are unreachable", what)
	}
	return w.rec.Address, nil
}

// recordMaster writes a master's API address, so that every master can
// point clients at it once it leads.
func (c *core) recordMaster(id, apiAddr string) {
	c.fx.persist([]persistence.Command{persistence.PutMaster(persistence.MasterRecord{ID: id, APIAddr: apiAddr})}, c.logPersistFailure("record master "+id))
}

// forgetMaster deletes the record of a master that left.
func (c *core) forgetMaster(id string) {
	c.fx.persist([]persistence.Command{persistence.DeleteMaster(id)}, c.logPersistFailure("forget master "+id))
}
