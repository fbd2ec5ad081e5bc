package master

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/ui"
	"github.com/berth-cluster/berth/wire"
)

// A log page of the web UI opens on every master, not only the leader:
// Spark's UI links each executor's logs to one master, fixed when the app
// registered, and that master may have stopped leading since. The leader
// finds the worker in its memory (lookup.go); a follower finds it in its
// replica (the worker of a live executor, of an executor that ended, kept
// for its active app or in a finished app's final record, of a driver)
// and reads the log from the worker itself, as a master may (the worker's
// log routes are wire.AccessMaster). What the replica does not hold is
// the leader's to answer: the page then links there.

// uiLogURL is the worker's URL of target's log.
func (s uiSource) uiLogURL(ctx context.Context, t ui.LogTarget) (string, error) {
	url, err := query(ctx, s.m, func(c *core) (string, error) { return logURL(t, c.driverWorkerAddress, c.executorWorkerAddress) })
	var se *httpx.StatusError
	if err == nil || !errors.As(err, &se) || se.Code != wire.CodeNotLeader {
		return url, err
	}
	var found string
	var ferr error
	rerr := s.m.engine.Read(ctx, func(st *persistence.State) {
		found, ferr = logURL(t, replicaDriverWorker(st), replicaExecutorWorker(st))
	})
	if rerr != nil {
		return "", fmt.Errorf("reading the replica: %w", rerr)
	}
	if ferr != nil {
		return "", err // not in the replica: the leader's (not_leader, with where it is)
	}
	return found, nil
}

// logURL is the worker's URL of target's log, its worker's address from
// driverAddr or execAddr.
func logURL(t ui.LogTarget, driverAddr func(string) (string, error), execAddr func(string, int) (string, error)) (string, error) {
	if t.AppID == "" {
		addr, err := driverAddr(t.DriverID)
		return addr + wire.WorkerAPI.DriverLogs.Path(t.DriverID, t.Stream), err
	}
	addr, err := execAddr(t.AppID, t.Executor)
	return addr + wire.WorkerAPI.ExecutorLogs.Path(t.AppID, strconv.Itoa(t.Executor), t.Stream), err
}

var errNotInReplica = httpx.Coded(http.StatusNotFound, wire.CodeLogsUnreachable, "not in this master's replica")

func replicaWorker(st *persistence.State, id string) (string, error) {
	if w := st.Workers[id]; id != "" && w != nil && w.Address != "" {
		return w.Address, nil
	}
	return "", errNotInReplica
}

func replicaDriverWorker(st *persistence.State) func(string) (string, error) {
	return func(id string) (string, error) {
		if d := st.Drivers[id]; d != nil {
			return replicaWorker(st, d.WorkerID)
		}
		return "", errNotInReplica
	}
}

func replicaExecutorWorker(st *persistence.State) func(string, int) (string, error) {
	return func(appID string, id int) (string, error) {
		if e := st.Executors[persistence.ExecutorKey(appID, id)]; e != nil {
			return replicaWorker(st, e.WorkerID)
		}
		var ended []wire.ExecutorStatus
		if r := st.EndedExecutors[appID]; r != nil {
			ended = r.Executors
		}
		if a := st.Apps[appID]; a != nil {
			ended = append(slices.Clip(ended), a.Executors...)
		}
		for _, e := range ended {
			if e.ID == id {
				return replicaWorker(st, e.WorkerID)
			}
		}
		return "", errNotInReplica
	}
}
