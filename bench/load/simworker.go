package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// simExec is one executor a simulated worker holds: no process, only what
// the worker reports of it.
type simExec struct {
	cores, memory int
	state         wire.ExecutorState
}

// simWorker is one simulated worker of a fleet: it registers, heartbeats,
// holds the executors launched on it, and can be killed and revived.
type simWorker struct {
	f    *fleet
	n    int
	id   string
	host string
	port int
	addr string

	epoch    atomic.Uint64
	interval atomic.Int64 // ns, from the last registration
	lastOK   atomic.Int64 // unix ns of the last acknowledged heartbeat
	dead     atomic.Bool  // killed by the tool: silent and unreachable

	mu    sync.Mutex
	execs map[execKey]*simExec
	stop  chan struct{} // closed to end the current heartbeat loop
	gen   int           // counts lives (kill/revive), so a stale loop does nothing
}

func (w *simWorker) observeEpoch(e uint64) {
	for {
		cur := w.epoch.Load()
		if e <= cur || w.epoch.CompareAndSwap(cur, e) {
			return
		}
	}
}

// acceptEpoch is the worker's fence: a command older than the newest epoch
// seen is refused; a newer one becomes the newest. It returns the newest.
func (w *simWorker) acceptEpoch(e uint64) (uint64, bool) {
	w.observeEpoch(e)
	newest := w.epoch.Load() // at least e: the epoch only grows
	return newest, e == newest
}

// register announces the worker and sends its latest state, retrying a few
// times with a short backoff.
func (w *simWorker) register(ctx context.Context) error {
	req := wire.RegisterWorker{
		ID: w.id, Host: w.host, Port: w.port, Address: w.addr,
		Cores: w.f.cfg.Cores, MemoryMB: w.f.cfg.MemoryMB,
	}
	var err error
	for attempt := range 6 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
			}
		}
		var reg wire.RegisteredWorker
		if err = w.f.mc.do(ctx, on(wire.MasterAPI.RegisterWorker, req), &reg); err != nil {
			w.f.n.regErrors.Add(1)
			w.f.note("register", "registering %s: %v", w.id, err)
			continue
		}
		w.observeEpoch(reg.Epoch)
		w.interval.Store(int64(time.Duration(reg.HeartbeatIntervalMs) * time.Millisecond))
		var reply wire.LatestStateReply
		if err = w.f.mc.do(ctx, on(wire.MasterAPI.LatestState, w.latestState(), w.id), &reply); err != nil {
			w.f.n.regErrors.Add(1)
			w.f.note("register", "sending the latest state of %s: %v", w.id, err)
			continue
		}
		w.lastOK.Store(time.Now().UnixNano())
		w.f.n.registrations.Add(1)
		return nil
	}
	return fmt.Errorf("registering %s: %w", w.id, err)
}

func (w *simWorker) latestState() wire.WorkerLatestState {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := wire.WorkerLatestState{WorkerID: w.id, Executors: []wire.ExecutorReport{}, Drivers: []wire.DriverReport{}}
	for k, e := range w.execs {
		st.Executors = append(st.Executors, wire.ExecutorReport{AppID: k.app, ExecutorID: k.id, Cores: e.cores, MemoryMB: e.memory, State: e.state})
	}
	slices.SortFunc(st.Executors, func(a, b wire.ExecutorReport) int {
		return cmp.Or(cmp.Compare(a.AppID, b.AppID), cmp.Compare(a.ExecutorID, b.ExecutorID))
	})
	return st
}

func (w *simWorker) used() (cores, memory int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.execs {
		cores += e.cores
		memory += e.memory
	}
	return cores, memory
}

func (w *simWorker) coresOf(app string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := 0
	for k, e := range w.execs {
		if k.app == app {
			c += e.cores
		}
	}
	return c
}

// startLoop starts a heartbeat loop whose first heartbeat is after first.
func (w *simWorker) startLoop(first time.Duration) {
	w.mu.Lock()
	stop := make(chan struct{})
	w.stop = stop
	gen := w.gen
	w.mu.Unlock()
	w.f.spawn(func() { w.heartbeatLoop(stop, gen, first) })
}

// heartbeatLoop heartbeats every interval on a fixed schedule (like a
// ticker: a late heartbeat does not shift the following ones, and one that
// could not be sent in its slot is skipped rather than sent in a burst).
func (w *simWorker) heartbeatLoop(stop chan struct{}, gen int, first time.Duration) {
	f := w.f
	next := time.Now().Add(first)
	timer := time.NewTimer(first)
	defer timer.Stop()
	prevOK := time.Time{}
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-stop:
			return
		case <-timer.C:
		}
		sched := next
		cores, mem := w.used()
		var reply wire.HeartbeatReply
		_, rtt, err := f.mc.timed(f.ctx, on(wire.MasterAPI.WorkerHeartbeat, wire.Heartbeat{CoresUsed: cores, MemoryUsedMB: mem}, w.id), &reply)
		done := time.Now()
		if f.ctx.Err() != nil || w.stale(gen) {
			return
		}
		var gap time.Duration
		if err == nil {
			if !prevOK.IsZero() {
				gap = done.Sub(prevOK)
			}
			prevOK = done
			w.lastOK.Store(done.UnixNano())
			w.observeEpoch(reply.Epoch)
			if reply.HeartbeatIntervalMs > 0 { // the master's interval grows with the fleet
				w.interval.Store(int64(time.Duration(reply.HeartbeatIntervalMs) * time.Millisecond))
			}
		} else {
			f.n.hbErrors.Add(1)
			f.note("heartbeat", "heartbeat of %s failed: %v", w.id, err)
		}
		f.hb.record(err == nil, rtt, done.Sub(sched), gap, w.id)
		forgotten := err == nil && reply.Reconnect
		var se *httpx.StatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			forgotten = true
		}
		switch {
		case f.cfg.FollowLeader && (err != nil || forgotten):
			// The master died or a new leader asks: look for the leader.
			f.n.followed.Add(1)
			if rerr := w.register(f.ctx); rerr != nil {
				f.note("re-register", "re-registering %s after a failover failed: %v", w.id, rerr)
			}
			prevOK = time.Time{}
		case forgotten:
			// The master forgot a worker the tool never killed.
			f.n.reregistered.Add(1)
			f.note("false expiry", "master asked %s to register again (false expiry)", w.id)
			if rerr := w.register(f.ctx); rerr != nil {
				f.note("re-register", "re-registering %s failed: %v", w.id, rerr)
			}
			prevOK = time.Time{}
		}
		iv := time.Duration(w.interval.Load())
		if iv <= 0 {
			iv = time.Second
		}
		next = next.Add(iv)
		if now := time.Now(); next.Before(now) {
			next = now.Add(iv - now.Sub(next)%iv) // skip the slots already missed
		}
		timer.Reset(time.Until(next))
	}
}

func (w *simWorker) stale(gen int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen != gen
}

// kill makes the worker vanish: no more heartbeats, and every command to it
// has its connection closed unanswered.
func (w *simWorker) kill() {
	w.dead.Store(true)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	if w.stop != nil {
		close(w.stop)
		w.stop = nil
	}
}

// revive restarts a killed worker empty (a new process with the same id),
// registers it and starts heartbeating.
func (w *simWorker) revive(ctx context.Context) error {
	w.mu.Lock()
	w.execs = map[execKey]*simExec{}
	w.gen++
	w.mu.Unlock()
	w.dead.Store(false)
	if err := w.register(ctx); err != nil {
		return err
	}
	w.startLoop(time.Duration(w.interval.Load()))
	return nil
}

// report tells the master an executor's new state.
func (w *simWorker) report(k execKey, state wire.ExecutorState) {
	f := w.f
	if w.dead.Load() {
		return
	}
	msg := wire.ExecutorStateChanged{AppID: k.app, ExecutorID: k.id, State: state}
	err := f.mc.do(f.ctx, on(wire.MasterAPI.ExecutorStateReport, msg, w.id), nil)
	if f.ctx.Err() != nil || w.dead.Load() {
		return
	}
	var se *httpx.StatusError
	switch {
	case err == nil && state == wire.ExecutorRunning:
		now := time.Now()
		w.mu.Lock()
		if e := w.execs[k]; e != nil {
			e.state = wire.ExecutorRunning
		}
		w.mu.Unlock()
		f.mu.Lock()
		f.acks = append(f.acks, ackRec{At: now, Worker: w.n, AppID: k.app, ExecID: k.id})
		f.mu.Unlock()
		f.n.running.Add(1)
	case err == nil:
	case state.Finished() && errors.As(err, &se) && se.Status == http.StatusNotFound:
		f.n.finalUnknown.Add(1)
	default:
		f.n.stateErrors.Add(1)
		f.note("report", "%s reporting %s/%d %s: %v", w.id, k.app, k.id, state, err)
	}
}
