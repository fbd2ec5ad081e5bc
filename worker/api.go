package worker

import (
	"fmt"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// handler is the worker's API (see wire/worker.go), behind the secret.
func (w *Worker) handler() http.Handler {
	mux := http.NewServeMux()
	api := wire.WorkerAPI
	mux.HandleFunc(api.Health.Mux(), func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = rw.Write([]byte("ok\n"))
	})
	mux.HandleFunc(api.State.Mux(), w.handleState)
	mux.Handle(api.Metrics.Mux(), w.metrics.handler())
	mux.HandleFunc(api.ExecutorLogs.Mux(), w.handleExecutorLog)
	mux.HandleFunc(api.DriverLogs.Mux(), w.handleDriverLog)

	command(mux, w, api.LaunchExecutor, "launch executor", validateLaunchExecutor, w.launchExecutor)
	command(mux, w, api.KillExecutor, "kill executor", validateKillExecutor, w.killExecutor)
	command(mux, w, api.LaunchDriver, "launch driver", validateLaunchDriver, w.launchDriver)
	command(mux, w, api.KillDriver, "kill driver", validateKillDriver, w.killDriver)
	command(mux, w, api.AppFinished, "application finished", validateAppFinished, w.appFinished)
	command(mux, w, api.Reconnect, "reconnect", validateReconnect, w.reconnect)
	sessions := w.uiSessions()
	w.mountUI(mux, sessions)
	return httpx.Authorize(wire.WorkerAPI, mux, httpx.Auth{Secret: w.cfg.Secret, TLS: w.cfg.TLS != nil, UI: sessions})
}

// command registers the handler of a master's command on its route (whose
// body type is the command's: a handler of another type does not
// compile): decode strictly (400/413), validate (400), check the epoch (409
// StaleEpoch if older than the newest seen), then apply. Nothing changes
// unless all the checks pass.
func command[T wire.Command](mux *http.ServeMux, w *Worker, route wire.Route[T, wire.None], name string, validate func(*T) error, apply func(*T) error) {
	mux.HandleFunc(route.Mux(), func(rw http.ResponseWriter, r *http.Request) {
		var c T
		if err := httpx.DecodeJSON(rw, r, &c); err != nil {
			w.log.Warn("refused a command", "command", name, "err", err)
			httpx.WriteErr(rw, r, err)
			return
		}
		if err := validate(&c); err != nil {
			w.log.Warn("refused a command", "command", name, "err", err)
			httpx.WriteErr(rw, r, httpx.Errorf(http.StatusBadRequest, "%s: %v", name, err))
			return
		}
		if newest, ok := w.acceptEpoch(c.CommandEpoch()); !ok {
			w.log.Warn("refused a command from an older master", "command", name, "epoch", c.CommandEpoch(), "newest", newest)
			httpx.WriteJSON(rw, http.StatusConflict, wire.StaleEpoch{
				Error: fmt.Sprintf("%s: stale epoch %d, the newest this worker has seen is %d", name, c.CommandEpoch(), newest),
				Code:  wire.CodeStaleEpoch,
				Epoch: newest,
			})
			return
		}
		if err := apply(&c); err != nil {
			httpx.WriteErr(rw, r, err)
			return
		}
		w.log.Debug("command applied", "command", name) // not the body: its env may hold secrets
		httpx.WriteJSON(rw, http.StatusOK, struct{}{})
	})
}

func (w *Worker) killExecutor(c *wire.KillExecutor) error {
	return w.killOnRequest(w.procs.executor(c.AppID, c.ExecutorID), fmt.Sprintf("executor %d of app %s", c.ExecutorID, c.AppID), time.Duration(c.GraceMs)*time.Millisecond)
}

func (w *Worker) killDriver(c *wire.KillDriver) error {
	return w.killOnRequest(w.procs.driver(c.DriverID), "driver "+c.DriverID, 0)
}

// killOnRequest kills p (what names it) for the master, with grace (0:
// --kill-grace): 404 if it does not run here.
func (w *Worker) killOnRequest(p *proc, what string, grace time.Duration) error {
	if p == nil {
		return httpx.Coded(http.StatusNotFound, wire.CodeUnknownProcess, "unknown %s", what)
	}
	w.killWithGrace(p, reasonMaster, grace)
	return nil
}

// appFinished kills the executors of an app that ended. Spark broadcasts
// it to every worker the app used: an app unknown here is fine.
func (w *Worker) appFinished(c *wire.ApplicationFinished) error {
	for _, p := range w.procs.live(c.AppID, false) {
		w.kill(p, reasonAppEnded)
	}
	return nil
}

// reconnect has the worker register with the master the command names.
func (w *Worker) reconnect(c *wire.Reconnect) error {
	w.sess.reconnect(normalizeMaster(c.Master))
	return nil
}

// acceptEpoch accepts a command's epoch unless it is older than the newest
// seen, and makes it the newest if it is newer. It returns the newest.
func (w *Worker) acceptEpoch(e uint64) (uint64, bool) {
	for {
		cur := w.epoch.Load()
		if e < cur {
			return cur, false
		}
		if e == cur || w.epoch.CompareAndSwap(cur, e) {
			return e, true
		}
	}
}

// observeEpoch learns an epoch from a master's reply.
func (w *Worker) observeEpoch(e uint64) {
	for {
		cur := w.epoch.Load()
		if e <= cur || w.epoch.CompareAndSwap(cur, e) {
			return
		}
	}
}

func (w *Worker) handleState(rw http.ResponseWriter, _ *http.Request) {
	st := w.latestState()
	st.Epoch = w.epoch.Load()
	st.Master = w.sess.masterURL()
	httpx.WriteJSON(rw, http.StatusOK, st)
}

// latestState is everything the worker runs (what has not ended).
func (w *Worker) latestState() wire.WorkerLatestState {
	execs, drivers := w.procs.snapshot()
	endedExecs, endedDrivers := w.reports.unacknowledged()
	return wire.WorkerLatestState{WorkerID: w.id, Executors: append(execs, endedExecs...), Drivers: append(drivers, endedDrivers...)}
}
