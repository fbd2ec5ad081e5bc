package load

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// handler is the worker API of every simulated worker: the commands the
// master sends, under /w/{n}.
func (f *fleet) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/state", f.withWorker(func(w *simWorker, rw http.ResponseWriter, r *http.Request) {
		st := w.latestState()
		st.Epoch = w.epoch.Load()
		st.Master = f.mc.base()
		httpx.WriteJSON(rw, http.StatusOK, st)
	}))
	mux.Handle("POST /v1/executors", command(f, func(c *wire.LaunchExecutor) uint64 { return c.Epoch },
		func(w *simWorker, c *wire.LaunchExecutor) (func(), error) {
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
		}))
	mux.Handle("POST /v1/executors/kill", command(f, func(c *wire.KillExecutor) uint64 { return c.Epoch },
		func(w *simWorker, c *wire.KillExecutor) (func(), error) {
			k := execKey{c.AppID, c.ExecutorID}
			w.mu.Lock()
			_, ok := w.execs[k]
			delete(w.execs, k)
			w.mu.Unlock()
			if !ok {
				f.n.killsUnknown.Add(1)
				return nil, httpx.Errorf(http.StatusNotFound, "unknown executor %d of app %s", c.ExecutorID, c.AppID)
			}
			f.n.kills.Add(1)
			return func() { w.report(k, wire.ExecutorKilled) }, nil
		}))
	mux.Handle("POST /v1/apps/finished", command(f, func(c *wire.ApplicationFinished) uint64 { return c.Epoch },
		func(w *simWorker, c *wire.ApplicationFinished) (func(), error) {
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
		}))
	mux.Handle("POST /v1/reconnect", command(f, func(c *wire.Reconnect) uint64 { return c.Epoch },
		func(w *simWorker, c *wire.Reconnect) (func(), error) {
			f.n.reconnectCmds.Add(1)
			f.note("reconnect", "%s told to reconnect to %s", w.id, c.Master)
			return func() {
				if err := w.register(f.ctx); err != nil {
					f.note("re-register", "re-registering %s failed: %v", w.id, err)
				}
			}, nil
		}))
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

// command handles one master command like a real worker: strict decoding
// (400), the epoch fence (409 StaleEpoch), then apply; after runs once the
// 200 is written (the worker acknowledges a launch, then reports RUNNING).
func command[T any](f *fleet, epoch func(*T) uint64, apply func(w *simWorker, c *T) (after func(), err error)) http.Handler {
	return f.withWorker(func(w *simWorker, rw http.ResponseWriter, r *http.Request) {
		var c T
		if err := httpx.DecodeJSON(rw, r, &c); err != nil {
			f.n.badCommands.Add(1)
			f.note("bad command", "%s refused a command to %s: %v", w.id, r.URL.Path, err)
			httpx.WriteErr(rw, err)
			return
		}
		if newest, ok := w.acceptEpoch(epoch(&c)); !ok {
			f.n.staleRefused.Add(1)
			httpx.WriteJSON(rw, http.StatusConflict, wire.StaleEpoch{
				Error: fmt.Sprintf("stale epoch %d, the newest this worker has seen is %d", epoch(&c), newest),
				Epoch: newest,
			})
			return
		}
		after, err := apply(w, &c)
		if err != nil {
			httpx.WriteErr(rw, err)
			return
		}
		httpx.WriteJSON(rw, http.StatusOK, struct{}{})
		if after != nil {
			f.spawn(after)
		}
	})
}
