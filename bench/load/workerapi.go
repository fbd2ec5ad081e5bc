package load

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// handler is the worker API of every simulated worker (wire.WorkerAPI):
// its latest state and the commands the master sends. The worker a
// request is for is the one listening at the address it came to.
func (f *fleet) handler() http.Handler {
	mux := http.NewServeMux()
	api := wire.WorkerAPI
	mux.HandleFunc(api.State.Mux(), f.withWorker(func(w *simWorker, rw http.ResponseWriter, r *http.Request) {
		st := w.latestState()
		st.Epoch = w.epoch.Load()
		st.Master = f.mc.base()
		httpx.WriteJSON(rw, http.StatusOK, st)
	}))
	command(mux, f, api.LaunchExecutor, func(w *simWorker, c *wire.LaunchExecutor) (func(), error) {
		if c.AppID == "" || c.ExecutorID < 0 || c.Cores <= 0 {
			return nil, httpx.Errorf(http.StatusBadRequest, "launch executor: bad app, id or cores")
		}
		k := execKey{c.AppID, c.ExecutorID}
		w.mu.Lock()
		_, dup := w.execs[k]
		if !dup {
			w.execs[k] = &simExec{cores: c.Cores, memory: c.MemoryMB, state: wire.ExecutorLaunching}
		}
		w.mu.Unlock()
		if dup {
			f.n.dupLaunches.Add(1)
			f.note("duplicate", "duplicate launch of %s/%d on %s", c.AppID, c.ExecutorID, w.id)
			return nil, nil
		}
		f.recordLaunch(launchRec{At: time.Now(), Worker: w.n, AppID: c.AppID, ExecID: c.ExecutorID, Cores: c.Cores})
		return func() { w.report(k, wire.ExecutorRunning) }, nil
	})
	command(mux, f, api.KillExecutor, func(w *simWorker, c *wire.KillExecutor) (func(), error) {
		k := execKey{c.AppID, c.ExecutorID}
		w.mu.Lock()
		_, ok := w.execs[k]
		delete(w.execs, k)
		w.mu.Unlock()
		if !ok {
			f.n.killsUnknown.Add(1)
			return nil, httpx.Coded(http.StatusNotFound, wire.CodeUnknownProcess, "unknown executor %d of app %s", c.ExecutorID, c.AppID)
		}
		f.n.kills.Add(1)
		return func() { w.report(k, wire.ExecutorKilled) }, nil
	})
	command(mux, f, api.AppFinished, func(w *simWorker, c *wire.ApplicationFinished) (func(), error) {
		f.n.appFinished.Add(1)
		var gone []execKey
		w.mu.Lock()
		for k := range w.execs {
			if k.app == c.AppID {
				gone = append(gone, k)
				delete(w.execs, k)
			}
		}
		w.mu.Unlock()
		return func() {
			for _, k := range gone {
				w.report(k, wire.ExecutorKilled)
			}
		}, nil
	})
	command(mux, f, api.Reconnect, func(w *simWorker, c *wire.Reconnect) (func(), error) {
		f.n.reconnectCmds.Add(1)
		f.note("reconnect", "%s told to reconnect to %s", w.id, c.Master)
		return func() {
			if err := w.register(f.ctx); err != nil {
				f.note("re-register", "re-registering %s failed: %v", w.id, err)
			}
		}, nil
	})
	return mux
}

// withWorker finds the worker by the address the request came to. A worker
// the tool killed does not answer: its connection is closed, as a dead
// host's would be refused.
func (f *fleet) withWorker(h func(w *simWorker, rw http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		var w *simWorker
		if local != nil {
			w = f.byAddr[local.String()]
		}
		if w == nil {
			httpx.WriteError(rw, http.StatusNotFound, "no simulated worker at %v", local)
			return
		}
		if w.dead.Load() {
			f.n.deadConnClosed.Add(1)
			if hj, ok := rw.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			httpx.WriteError(rw, http.StatusServiceUnavailable, "worker is down")
			return
		}
		h(w, rw, r)
	}
}

// command registers the handler of master command route r, handled like a
// real worker does: strict decoding (400), the epoch fence (409
// stale_epoch), then apply; after runs once the 200 is written (the worker
// acknowledges a launch, then reports RUNNING). The simulated worker runs
// no process, so it has no driver commands.
func command[T wire.Command](mux *http.ServeMux, f *fleet, r wire.Route[T, wire.None], apply func(w *simWorker, c *T) (after func(), err error)) {
	mux.HandleFunc(r.Mux(), f.withWorker(func(w *simWorker, rw http.ResponseWriter, req *http.Request) {
		var c T
		if err := httpx.DecodeJSON(rw, req, &c); err != nil {
			f.n.badCommands.Add(1)
			f.note("bad command", "%s refused a command to %s: %v", w.id, r.Pattern, err)
			httpx.WriteErr(rw, req, err)
			return
		}
		if newest, ok := w.acceptEpoch(c.CommandEpoch()); !ok {
			f.n.staleRefused.Add(1)
			httpx.WriteJSON(rw, http.StatusConflict, wire.StaleEpoch{
				Error: fmt.Sprintf("stale epoch %d, the newest this worker has seen is %d", c.CommandEpoch(), newest),
				Code:  wire.CodeStaleEpoch,
				Epoch: newest,
			})
			return
		}
		after, err := apply(w, &c)
		if err != nil {
			httpx.WriteErr(rw, req, err)
			return
		}
		httpx.WriteJSON(rw, http.StatusOK, struct{}{})
		if after != nil {
			f.spawn(after)
		}
	}))
}
