package master

import (
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// A worker removed (silent past its timeout, shut down, restarted, or not
// back after a failover): commit-first, then its executors LOST and its
// drivers relaunched or ended.

// removeWorker declares a worker DEAD. The worker's deletion and the end of
// every executor placed on it are one write; once durable, its executors
// are LOST (their apps told, their cores re-placed at once) and each of its
// drivers is relaunched elsewhere if supervised, or ends (driverLost), each
// through its own write. Until then the worker takes nothing new. done, if
// not nil, learns the outcome.
func (c *core) removeWorker(w *workerInfo, reason string, done func(error)) {
	if w.state == wire.WorkerDead {
		if done != nil {
			done(nil)
		}
		return
	}
	if joinEnding(&w.removing, done) {
		return
	}
	c.touched(w)
	c.log.Warn("removing worker", "worker", w.rec.ID, "reason", reason, "executors", len(w.executors), "drivers", len(w.drivers))
	// Its executors' ends first: an end is kept only for an executor still
	// placed, and the worker's deletion drops the placements on it.
	var cmds []persistence.Command
	ends := map[*executorInfo]executorEnd{}
	for _, e := range sortedExecutors(w.executors) {
		ends[e] = lostWith(reason).decided(e)
		e.endingAs = ends[e].status
		cmds = append(cmds, persistence.EndExecutor(e.app.rec.ID, *ends[e].status)...)
	}
	cmds = append(cmds, persistence.DeleteWorker(w.rec.ID))
	c.commit(cmds, func() { c.workerRemoved(w, reason, ends) }, func(err error) {
		ws := *w.removing
		if err != nil {
			c.log.Warn("removing worker failed; it stays as it was", "worker", w.rec.ID, "err", err)
			w.removing = nil
			for e := range ends {
				e.endingAs = nil
			}
			c.touched(w)
		}
		ws.finish(err)
	})
}

// lostWith is the end of an executor whose worker was removed for reason.
func lostWith(reason string) executorEnd {
	msg := "worker lost: " + reason
	return executorEnd{state: wire.ExecutorLost, message: msg, event: wire.EventExecutorLost, note: msg}
}

// workerRemoved applies a worker's durable removal; ends are its
// executors' as written (one placed since has none: decided here).
func (c *core) workerRemoved(w *workerInfo, reason string, ends map[*executorInfo]executorEnd) {
	if w.state == wire.WorkerDead || c.workers[w.rec.ID] != w {
		return
	}
	w.state = wire.WorkerDead
	c.touched(w)
	w.deadSince = c.now()
	if c.workerByAddr[w.hostPort()] == w {
		delete(c.workerByAddr, w.hostPort())
	}
	c.deadAt[w.hostPort()] = append(c.deadAt[w.hostPort()], w.rec.ID)
	for _, e := range sortedExecutors(w.executors) {
		end, ok := ends[e]
		if !ok {
			end = lostWith(reason)
		}
		c.executorEnded(e, end)
	}
	for _, d := range sortedDrivers(w.drivers) {
		c.driverLost(d, lostWith(reason).message, nil)
	}
	c.schedule()
	c.maybeCompleteRecovery() // it may have been the last one to wait for
}
