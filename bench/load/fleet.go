package load

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/internal/httpx"
)

// A fleet is many simulated workers in this process. Each listens on an
// address of its own (a master takes only http(s)://host:port as a
// worker's address), slotAddr of its slot, and one HTTP server serves them
// all, telling them apart by the address a request came to. They speak the real
// protocol: register, send their latest state, heartbeat at the interval
// the master asks for, fence commands by epoch (409 on a stale one), and
// report each executor RUNNING once its launch is acknowledged and KILLED
// when it is killed. They run no processes.

type fleetConfig struct {
	Workers  int
	Cores    int
	MemoryMB int
	IDPrefix string // worker n is <IDPrefix>-<n>
	PortBase int    // worker n listens at slotAddr(PortBase+n)
	Secret   string
	Seed     uint64 // of the heartbeat phase jitter
	// NoListen: the workers register their slot address without listening
	// there, for fleets larger than the file descriptors allow (a listener
	// each); only for measures that send them no command (heartbeats). The
	// master's probes of those addresses are answered for them
	// (probesink.go).
	NoListen bool
	// Scheme of the workers' addresses: "http", or "https" for a master
	// that runs TLS (only with NoListen: the fleet serves no TLS).
	Scheme string
	// FollowLeader: a worker whose heartbeat fails, or whom the master asks
	// to, registers again (through the leader the client finds), as a real
	// worker does when its master dies; counted as re-registrations after
	// a failover, not as false expiries.
	FollowLeader bool
}

type fleet struct {
	cfg    fleetConfig
	mc     *masterClient
	srv    *http.Server
	ws     []*simWorker
	byID   map[string]*simWorker
	byAddr map[string]*simWorker // by the address a worker listens at
	sink   *probeSink            // NoListen: answers the master's probes

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
	followed       atomic.Int64 // with FollowLeader: registrations again after a failed heartbeat or a new leader's ask
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

func newFleet(cfg fleetConfig, mc *masterClient) (*fleet, error) {
	if cfg.Workers <= 0 || cfg.Cores <= 0 || cfg.MemoryMB <= 0 {
		return nil, fmt.Errorf("fleet: workers, cores and memory must be positive")
	}
	if cfg.PortBase < 0 || slotPort(cfg.PortBase+cfg.Workers) > 65535 {
		return nil, fmt.Errorf("fleet: --port-base %d + %d workers leaves the port range", cfg.PortBase, cfg.Workers)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{started: time.Now(), cfg: cfg, mc: mc, ctx: ctx, cancel: cancel, byID: map[string]*simWorker{}, byAddr: map[string]*simWorker{}}
	f.srv = &http.Server{Handler: httpx.RequireSecret(cfg.Secret, f.handler()), ReadHeaderTimeout: 10 * time.Second}
	if cfg.NoListen {
		var err error
		if f.sink, err = startProbeSink(cfg.PortBase, cfg.Workers); err != nil {
			f.note("no probe sink", "the master's probes of workers whose connection closed will find nothing listening and remove them: %v", err)
		}
	}
	for n := range cfg.Workers {
		addr := slotAddr(cfg.PortBase + n)
		var ln net.Listener
		if !cfg.NoListen {
			var err error
			if ln, err = net.Listen("tcp", addr); err != nil {
				f.srv.Close()
				cancel()
				return nil, fmt.Errorf("fleet: worker %d (--port-base %d): %w", n, cfg.PortBase, err)
			}
			addr = ln.Addr().String()
		}
		host, port, _ := httpx.SplitHostPort(addr)
		w := &simWorker{
			f: f, n: n, id: fmt.Sprintf("%s-%05d", cfg.IDPrefix, n), host: host, port: port,
			addr: cmp.Or(cfg.Scheme, "http") + "://" + addr, execs: map[execKey]*simExec{},
		}
		f.ws = append(f.ws, w)
		f.byID[w.id] = w
		f.byAddr[addr] = w
		if ln != nil {
			go func() { _ = f.srv.Serve(ln) }()
		}
	}
	return f, nil
}

// Slots spread the workers over loopback addresses 127.0.0.2-251 and, 250
// workers to a port, ports from 10000: below the ephemeral range, so that
// 100,000 workers need 400 ports.
func slotAddr(slot int) string {
	return fmt.Sprintf("127.0.0.%d:%d", 2+slot%250, slotPort(slot))
}

func slotPort(slot int) int { return 10000 + slot/250 }

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
	f.sink.close()
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
	err := inParallel(ctx, len(f.ws), parallel, func(i int) error {
		w := f.ws[i]
		if err := w.register(ctx); err != nil {
			return err
		}
		w.startLoop(f.phase(w))
		return nil
	})
	return time.Since(start), err
}

// rampResult is how long a ramp took.
type rampResult struct {
	RegisterSeconds  float64 `json:"registerSeconds"`
	RegistrationsSec float64 `json:"registrationsPerSec"`
}

// ramp registers the whole fleet (see registerAll) within p's bound.
func (f *fleet) ramp(ctx context.Context, p rampParams) (rampResult, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.RampTimeout))
	defer cancel()
	took, err := f.registerAll(ctx, p.RegParallel)
	if err != nil {
		return rampResult{}, fmt.Errorf("registration ramp (%d registered in %s): %w", f.n.registrations.Load(), time.Since(f.started).Round(time.Millisecond), err)
	}
	return rampResult{RegisterSeconds: took.Seconds(), RegistrationsSec: benchstat.Rate(len(f.ws), took)}, nil
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

// launchesSince is the launches recorded from the i-th on.
func (f *fleet) launchesSince(i int) []launchRec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyFrom(f.launches, i)
}

// acksSince is the RUNNING reports accepted from the i-th on.
func (f *fleet) acksSince(i int) []ackRec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyFrom(f.acks, i)
}

// copyFrom copies s from index i on, for reading outside the lock.
func copyFrom[T any](s []T, i int) []T {
	if i >= len(s) {
		return nil
	}
	return slices.Clone(s[i:])
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
