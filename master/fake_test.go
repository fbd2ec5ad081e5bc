package master

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (f *fakeClock) Now() time.Time            { return f.t }
func (f *fakeClock) advance(d time.Duration)   { f.t = f.t.Add(d) }
func newFakeClock() *fakeClock                 { return &fakeClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)} }
func discardLogger() *slog.Logger              { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (f *fakeFx) leaderAddress() string        { return f.leader }
func (f *fakeFx) dropOutbound()                { f.dropped++ }
func (f *fakeFx) prepareLeadership(gen uint64) { f.prepared = append(f.prepared, gen) }

// fakeFx records what the core asks of the world. Writes stay pending until
// the test commits them, so tests see what happens before and after.
type fakeFx struct {
	state    *persistence.State // what the writes built
	pending  []proposal
	sent     []sentCommand
	resent   []string // workers resend was asked for
	prepared []uint64
	dropped  int
	leader   string
	probes   []probeRequest // probeWorker's requests, answered by the test
}

type sentCommand struct {
	worker string
	cmd    workerCommand
}

func (f *fakeFx) persist(cmds []persistence.Command, then func(error)) {
	f.pending = append(f.pending, proposal{cmds: cmds, then: then})
}

func (f *fakeFx) send(w *workerInfo, cmd workerCommand) {
	f.sent = append(f.sent, sentCommand{w.rec.ID, cmd})
}

func (f *fakeFx) resend(w *workerInfo) { f.resent = append(f.resent, w.rec.ID) }

// harness is a core with its fakes.
type harness struct {
	t     testing.TB
	c     *core
	fx    *fakeFx
	clock *fakeClock
}

func newHarness(t testing.TB, mutate func(*Config)) *harness {
	t.Helper()
	cfg := Config{ID: "m1", Advertise: "http://127.0.0.1:7077", WorkerTimeout: 60 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	fx := &fakeFx{state: persistence.NewState()}
	clock := newFakeClock()
	c, err := newCore(cfg, discardLogger(), clock, fx)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, c: c, fx: fx, clock: clock}
}

// commit makes every pending write durable and runs what waits on it, then
// lets the loop's scheduling pass run, as the real loop would.
func (h *harness) commit() {
	h.t.Helper()
	for {
		for len(h.fx.pending) > 0 {
			p := h.fx.pending[0]
			h.fx.pending = h.fx.pending[1:]
			for _, c := range p.cmds {
				if err := h.fx.state.Apply(c, nil); err != nil {
					h.t.Fatalf("applying %s: %v", c.Type, err)
				}
			}
			p.then(nil)
		}
		h.c.runSchedule()
		if len(h.fx.pending) == 0 {
			return
		}
	}
}

// failWrites fails every pending write with err.
func (h *harness) failWrites(err error) {
	for len(h.fx.pending) > 0 {
		p := h.fx.pending[0]
		h.fx.pending = h.fx.pending[1:]
		p.then(err)
	}
	h.c.runSchedule()
}

// lead makes the core an ALIVE leader of state s (empty if nil).
func (h *harness) lead(s *persistence.State) {
	h.t.Helper()
	h.c.elected()
	if s == nil {
		s = h.fx.state
	}
	s.Epoch++
	h.c.leadershipReady(h.c.gen, s, nil)
	h.commit()
}

// run runs a transition that replies, commits, and returns the reply.
func run[T any](h *harness, fn func(reply reply[T])) (T, error) {
	h.t.Helper()
	var v T
	var err error
	replied := false
	fn(func(rv T, rerr error) { v, err, replied = rv, rerr, true })
	h.commit()
	if !replied {
		h.t.Fatal("no reply after the writes committed")
	}
	return v, err
}

func (h *harness) addWorker(id string, cores, memoryMB int) *workerInfo {
	h.t.Helper()
	port := 10000 + len(h.c.workers)
	_, err := run(h, func(reply reply[wire.RegisteredWorker]) {
		h.c.registerWorker(wire.RegisterWorker{ID: id, Host: "127.0.0.1", Port: port, Cores: cores, MemoryMB: memoryMB, Address: fmt.Sprintf("http://127.0.0.1:%d", port), Incarnation: id + "-1"}, reply)
	})
	if err != nil {
		h.t.Fatalf("registering %s: %v", id, err)
	}
	return h.c.workers[id]
}

// newLeader is the opening most tests share: a harness (newHarness) whose
// core leads an empty state, with the named workers registered, 4 cores
// and 4096 MB each (addWorker registers other sizes).
func newLeader(t testing.TB, mutate func(*Config), workers ...string) *harness {
	t.Helper()
	h := newHarness(t, mutate)
	h.lead(nil)
	for _, id := range workers {
		h.addWorker(id, 4, 4096)
	}
	return h
}

// successor is a new master (a harness of its own, configured by mutate)
// that leads over what old committed, as after old's death.
func successor(t testing.TB, old *harness, mutate func(*Config)) *harness {
	t.Helper()
	h := newHarness(t, mutate)
	h.fx.state = old.fx.state.Clone()
	h.lead(h.fx.state)
	return h
}

// leaderWithOneApp is the common opening of a test: a leading master
// with one 4-core worker w1 and one app of at most 2 cores placed on it.
func leaderWithOneApp(t *testing.T) (*harness, *workerInfo, *appInfo) {
	h := newLeader(t, nil)
	w := h.addWorker("w1", 4, 4096)
	return h, w, h.addApp(wire.AppDescription{MaxCores: 2})
}

func (h *harness) addApp(desc wire.AppDescription) *appInfo {
	h.t.Helper()
	if desc.Command == nil {
		desc.Command = []string{"executor"}
	}
	v, err := run(h, func(reply reply[wire.Submitted]) { h.c.registerApp(desc, keyed{}, reply) })
	if err != nil {
		h.t.Fatalf("registering app: %v", err)
	}
	return h.c.apps[v.ID]
}

// addDriver submits a driver, commits, and returns its id.
func (h *harness) addDriver(desc wire.DriverDescription) string {
	h.t.Helper()
	v, err := run(h, func(reply reply[wire.Submitted]) { h.c.submitDriver(desc, keyed{}, reply) })
	if err != nil {
		h.t.Fatalf("submitting a driver: %v", err)
	}
	return v.ID
}

// sentTo returns the commands sent to paths, in order, and forgets them.
func (h *harness) takeSent(path string) []sentCommand {
	var out, rest []sentCommand
	for _, s := range h.fx.sent {
		if s.cmd.route.Pattern == path {
			out = append(out, s)
		} else {
			rest = append(rest, s)
		}
	}
	h.fx.sent = rest
	return out
}

// report sends a worker's report about an executor.
func (h *harness) report(e *executorInfo, state wire.ExecutorState, exitCode *int) {
	h.t.Helper()
	h.reportCaused(e, state, exitCode, wire.CauseProcess)
}

// reportCaused is report of a failure owed to cause.
func (h *harness) reportCaused(e *executorInfo, state wire.ExecutorState, exitCode *int, cause wire.FailureCause) {
	h.t.Helper()
	_, err := run(h, func(reply reply[wire.None]) {
		h.c.executorStateChanged(e.worker.rec.ID, wire.ExecutorStateChanged{AppID: e.app.rec.ID, ExecutorID: e.id, State: state, ExitCode: exitCode, Cause: cause}, reply)
	})
	if err != nil {
		h.t.Fatalf("report %s for %s/%d: %v", state, e.app.rec.ID, e.id, err)
	}
}

// layout is an app's live executors as "worker:cores" sorted.
func layout(a *appInfo) []string {
	var out []string
	for _, e := range sortedExecutors(a.executors) {
		out = append(out, fmt.Sprintf("%s:%d", e.worker.rec.ID, e.cores))
	}
	return out
}

func intp(v int) *int { return &v }

// pass lets d go by in ticks, as the real loop would, with the named
// workers heartbeating all along.
func (h *harness) pass(d time.Duration, keepAlive ...string) {
	h.t.Helper()
	step := h.c.cfg.tickInterval()
	for end := h.clock.t.Add(d); h.clock.t.Before(end); {
		h.clock.advance(min(step, end.Sub(h.clock.t)))
		for _, id := range keepAlive {
			h.c.heartbeat(id, wire.Heartbeat{})
		}
		h.c.tick()
		h.commit()
	}
}

// step commits one pending write and runs the scheduling pass.
func (h *harness) step() {
	h.t.Helper()
	p := h.fx.pending[0]
	h.fx.pending = h.fx.pending[1:]
	for _, c := range p.cmds {
		if err := h.fx.state.Apply(c, nil); err != nil {
			h.t.Fatal(err)
		}
	}
	p.then(nil)
	h.c.runSchedule()
}

// failover makes the core lose and win leadership again over the durable
// state (the writes not committed are lost with the old leader).
func (h *harness) failover() {
	h.t.Helper()
	h.fx.pending = nil
	h.c.revoked()
	h.c.elected()
	h.fx.state.Epoch++
	h.c.leadershipReady(h.c.gen, h.fx.state.Clone(), nil)
}

// reregister registers worker w again (incarnation as given) and returns the
// error.
func (h *harness) reregister(w *workerInfo, incarnation string) error {
	h.t.Helper()
	_, err := run(h, func(reply reply[wire.RegisteredWorker]) {
		h.c.registerWorker(wire.RegisterWorker{ID: w.rec.ID, Host: w.rec.Host, Port: w.rec.Port, Cores: w.rec.Cores, MemoryMB: w.rec.MemoryMB, Address: w.rec.Address, Incarnation: incarnation}, reply)
	})
	return err
}

func (f *fakeFx) probeWorker(p probeRequest) { f.probes = append(f.probes, p) }
