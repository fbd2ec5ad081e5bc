package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// A fleet is many simulated workers in this process. They share one HTTP
// server: worker n registers with the address http://127.0.0.1:PORT/w/n, so
// the master's commands to it arrive under /w/n/v1/... They speak the real
// protocol: register, send their latest state, heartbeat at the interval
// the master asks for, fence commands by epoch (409 on a stale one), and
// report each executor RUNNING once its launch is acknowledged and KILLED
// when it is killed. They run no processes.

type fleetConfig struct {
	Workers  int
	Cores    int
	MemoryMB int
	IDPrefix string // worker n is <IDPrefix>-<n>
	PortBase int    // worker n registers 127.0.0.1:<PortBase+n>
	Secret   string
	Seed     uint64 // of the heartbeat phase jitter
}

type fleet struct {
	cfg  fleetConfig
	mc   *masterClient
	ln   net.Listener
	srv  *http.Server
	base string // http://127.0.0.1:PORT
	ws   []*simWorker
	byID map[string]*simWorker

	started   time.Time
	ctx       context.Context // the fleet's lifetime: every loop stops with it
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once

	hb hbStats

	mu       sync.Mutex
	launches []launchRec
	acks     []ackRec       // RUNNING reports the master accepted
	notes    []string       // first few unexpected events of each kind, for the report
	noteKind map[string]int // events noted of each kind

	n counters
}

// counters are totals over the fleet's life.
type counters struct {
	registrations  atomic.Int64 // accepted registrations, the first ones included
	reregistered   atomic.Int64 // registrations after the master forgot a worker the tool had not killed: false expiries
	reconnectCmds  atomic.Int64 // Reconnect commands received
	hbErrors       atomic.Int64 // heartbeats that failed (transport or status)
	regErrors      atomic.Int64
	stateErrors    atomic.Int64 // executor-state reports that failed unexpectedly
	finalUnknown   atomic.Int64 // KILLED reports the master no longer knew (expected: it frees a killed executor at once)
	launches       atomic.Int64
	dupLaunches    atomic.Int64
	running        atomic.Int64
	kills          atomic.Int64
	killsUnknown   atomic.Int64
	appFinished    atomic.Int64
	staleRefused   atomic.Int64
	badCommands    atomic.Int64 // commands that did not decode strictly
	deadConnClosed atomic.Int64 // commands to a worker the tool killed: connection closed
}

type launchRec struct {
	At     time.Time
	Worker int
	AppID  string
	ExecID int
	Cores  int
}

type ackRec struct {
	At     time.Time
	Worker int
	AppID  string
	ExecID int
}

type execKey struct {
	app string
	id  int
}

type simExec struct {
	cores, memory int
	state         wire.ExecutorState
}

type simWorker struct {
	f    *fleet
	n    int
	id   string
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

func newFleet(cfg fleetConfig, mc *masterClient) (*fleet, error) {
	if cfg.Workers <= 0 || cfg.Cores <= 0 || cfg.MemoryMB <= 0 {
		return nil, fmt.Errorf("fleet: workers, cores and memory must be positive")
	}
	if cfg.PortBase+cfg.Workers > 65535 || cfg.PortBase <= 0 {
		return nil, fmt.Errorf("fleet: --port-base %d + %d workers leaves the port range", cfg.PortBase, cfg.Workers)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{started: time.Now(), cfg: cfg, mc: mc, ln: ln, base: "http://" + ln.Addr().String(), ctx: ctx, cancel: cancel, byID: map[string]*simWorker{}}
	for n := range cfg.Workers {
		w := &simWorker{
			f: f, n: n, id: fmt.Sprintf("%s-%05d", cfg.IDPrefix, n), port: cfg.PortBase + n,
			addr: f.base + "/w/" + strconv.Itoa(n), execs: map[execKey]*simExec{},
		}
		f.ws = append(f.ws, w)
		f.byID[w.id] = w
	}
	f.srv = &http.Server{Handler: httpx.RequireSecret(cfg.Secret, f.handler()), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// close stops the server, then every loop. Bounded: in-flight requests end
// with the fleet's context.
func (f *fleet) close() {
	f.closeOnce.Do(f.shutdown)
}

func (f *fleet) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if f.srv.Shutdown(ctx) != nil {
		f.srv.Close()
	}
	f.cancel()
	f.wg.Wait()
}

// note keeps the first few unexpected events of each kind.
func (f *fleet) note(kind, format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noteKind == nil {
		f.noteKind = map[string]int{}
	}
	f.noteKind[kind]++
	if f.noteKind[kind] <= 3 {
		f.notes = append(f.notes, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	}
}

// spawn runs fn in a goroutine that close waits for.
func (f *fleet) spawn(fn func()) {
	if f.ctx.Err() != nil {
		return
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
}

// registerAll registers every worker, at most parallel at a time, and starts
// each one's heartbeats as soon as it is registered (as a real worker does),
// at a random phase of its interval. It returns how long the registrations
// took.
func (f *fleet) registerAll(ctx context.Context, parallel int) (time.Duration, error) {
	start := time.Now()
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range max(1, min(parallel, len(f.ws))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(f.ws) || ctx.Err() != nil {
					return
				}
				w := f.ws[i]
				if err := w.register(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				w.startLoop(f.phase(w))
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}

// phase is when worker w first heartbeats after registering: a point of its
// interval drawn from the seed, so runs are reproducible.
func (f *fleet) phase(w *simWorker) time.Duration {
	iv := max(time.Duration(w.interval.Load()), time.Millisecond)
	return time.Duration(rand.New(rand.NewPCG(f.cfg.Seed, uint64(w.n))).Int64N(int64(iv)))
}

// snapshot is the counters by name, for the JSON report.
func (f *fleet) snapshot() map[string]int64 {
	c := &f.n
	return map[string]int64{
		"registrations": c.registrations.Load(), "falseExpiries": c.reregistered.Load(),
		"reconnectCommands": c.reconnectCmds.Load(), "heartbeatErrors": c.hbErrors.Load(),
		"registrationErrors": c.regErrors.Load(), "stateReportErrors": c.stateErrors.Load(),
		"killedReportsUnknown": c.finalUnknown.Load(), "launches": c.launches.Load(),
		"duplicateLaunches": c.dupLaunches.Load(), "runningAccepted": c.running.Load(),
		"kills": c.kills.Load(), "killsOfUnknown": c.killsUnknown.Load(),
		"applicationFinished": c.appFinished.Load(), "staleEpochRefused": c.staleRefused.Load(),
		"badCommands": c.badCommands.Load(), "commandsToDeadWorkers": c.deadConnClosed.Load(),
	}
}

// recordLaunch notes a launch command the moment it is accepted.
func (f *fleet) recordLaunch(r launchRec) {
	f.mu.Lock()
	f.launches = append(f.launches, r)
	f.mu.Unlock()
	f.n.launches.Add(1)
}

func (f *fleet) launchesSince(i int) []launchRec {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.launches) {
		return nil
	}
	return slices.Clone(f.launches[i:])
}

func (f *fleet) acksSince(i int) []ackRec {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.acks) {
		return nil
	}
	return slices.Clone(f.acks[i:])
}

func (f *fleet) counts() (launches, acks int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.launches), len(f.acks)
}

// appCores is the cores of app's executors live on workers the tool has
// not killed, as the workers see it.
func (f *fleet) appCores(app string) (cores int, holders []*simWorker) {
	for _, w := range f.ws {
		if w.dead.Load() {
			continue
		}
		c := w.coresOf(app)
		if c > 0 {
			cores += c
			holders = append(holders, w)
		}
	}
	return cores, holders
}

// ---- one simulated worker ----

func (w *simWorker) path(what string) string {
	return "/v1/workers/" + url.PathEscape(w.id) + "/" + what
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
// seen is refused; a newer one becomes the newest.
func (w *simWorker) acceptEpoch(e uint64) (uint64, bool) {
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

// register announces the worker and sends its latest state, retrying a few
// times with a short backoff.
func (w *simWorker) register(ctx context.Context) error {
	req := wire.RegisterWorker{
		ID: w.id, Host: "127.0.0.1", Port: w.port, Address: w.addr,
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
		if err = w.f.mc.do(ctx, http.MethodPost, "/v1/workers", req, &reg); err != nil {
			w.f.n.regErrors.Add(1)
			w.f.note("register", "registering %s: %v", w.id, err)
			continue
		}
		w.observeEpoch(reg.Epoch)
		w.interval.Store(int64(time.Duration(reg.HeartbeatIntervalMs) * time.Millisecond))
		var reply wire.LatestStateReply
		if err = w.f.mc.do(ctx, http.MethodPost, w.path("state"), w.latestState(), &reply); err != nil {
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
		if a.AppID != b.AppID {
			if a.AppID < b.AppID {
				return -1
			}
			return 1
		}
		return a.ExecutorID - b.ExecutorID
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
		_, rtt, err := f.mc.timed(f.ctx, http.MethodPost, w.path("heartbeat"), wire.Heartbeat{CoresUsed: cores, MemoryUsedMB: mem}, &reply)
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
		if forgotten {
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
	err := f.mc.do(f.ctx, http.MethodPost, w.path("executor-state"), msg, nil)
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

// ---- the worker API of every simulated worker ----

func (f *fleet) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /w/{n}/v1/state", f.withWorker(func(w *simWorker, rw http.ResponseWriter, r *http.Request) {
		st := w.latestState()
		st.Epoch = w.epoch.Load()
		st.Master = f.mc.base
		httpx.WriteJSON(rw, http.StatusOK, st)
	}))
	mux.Handle("POST /w/{n}/v1/executors", command(f, func(c *wire.LaunchExecutor) uint64 { return c.Epoch },
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
	mux.Handle("POST /w/{n}/v1/executors/kill", command(f, func(c *wire.KillExecutor) uint64 { return c.Epoch },
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
	mux.Handle("POST /w/{n}/v1/apps/finished", command(f, func(c *wire.ApplicationFinished) uint64 { return c.Epoch },
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
	mux.Handle("POST /w/{n}/v1/reconnect", command(f, func(c *wire.Reconnect) uint64 { return c.Epoch },
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

// withWorker resolves /w/{n}. A worker the tool killed does not answer: its
// connection is closed, as a dead host's would be refused.
func (f *fleet) withWorker(h func(w *simWorker, rw http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 0 || n >= len(f.ws) {
			httpx.WriteError(rw, http.StatusNotFound, "no simulated worker %q", r.PathValue("n"))
			return
		}
		w := f.ws[n]
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
