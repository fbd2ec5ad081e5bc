package master

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// statusOf is the HTTP status err carries, or 0 when it carries none.
func statusOf(err error) int { return statusErrorOf(err).Status }

// statusErrorOf is the *httpx.StatusError err carries, or a zero one
// (Status 0, no Code) when it carries none.
func statusErrorOf(err error) httpx.StatusError {
	var se *httpx.StatusError
	if errors.As(err, &se) {
		return *se
	}
	return httpx.StatusError{}
}

func TestRegistrationRules(t *testing.T) {
	h := newLeader(t, nil)
	reg := wire.RegisterWorker{ID: "w1", Host: "127.0.0.1", Port: 9001, Cores: 4, MemoryMB: 4096, Address: "http://127.0.0.1:9001"}

	// Not acknowledged before the record is durable.
	var got *wire.RegisteredWorker
	h.c.registerWorker(reg, func(v wire.RegisteredWorker, err error) { got = &v })
	if got != nil || h.c.workers["w1"] != nil {
		t.Fatal("worker registered before its record was written")
	}
	h.commit()
	if r := got; r == nil || r.Duplicate || r.HeartbeatIntervalMs != 15000 || r.Epoch != h.c.epoch {
		t.Fatalf("registration reply %+v", got)
	}
	if h.fx.state.Workers["w1"] == nil {
		t.Fatal("worker record not persisted")
	}

	// The same id again (a retry) is a duplicate, not a second worker.
	v, err := run(h, func(reply reply[wire.RegisteredWorker]) { h.c.registerWorker(reg, reply) })
	if err != nil || !v.Duplicate || len(h.c.workers) != 1 {
		t.Fatalf("duplicate registration: %v %+v, %d workers", err, v, len(h.c.workers))
	}

	// Another id at the address of the ALIVE worker is refused.
	other := reg
	other.ID = "w2"
	_, err = run(h, func(reply reply[wire.RegisteredWorker]) { h.c.registerWorker(other, reply) })
	if statusOf(err) != http.StatusConflict {
		t.Fatalf("second worker at a live worker's address: %v", err)
	}
	if h.c.workers["w2"] != nil || h.fx.state.Workers["w2"] != nil {
		t.Fatal("refused worker was recorded")
	}

	// Once the first is DEAD, a new worker at its address is accepted and
	// the DEAD entry dropped.
	h.c.removeWorker(h.c.workers["w1"], "test", nil)
	h.commit()
	if _, err := run(h, func(reply reply[wire.RegisteredWorker]) { h.c.registerWorker(other, reply) }); err != nil {
		t.Fatalf("worker at a DEAD worker's address: %v", err)
	}
	if h.c.workers["w1"] != nil || h.c.workers["w2"].state != wire.WorkerAlive {
		t.Fatalf("workers after replacement: %v", sortedKeys(h.c.workers))
	}
}

func TestHeartbeats(t *testing.T) {
	h := newLeader(t, nil)
	w := h.addWorker("w1", 4, 4096)
	h.clock.advance(10 * time.Second)
	r, err := h.c.heartbeat("w1", wire.Heartbeat{})
	if err != nil || r.Reconnect || !w.lastHeartbeat.Equal(h.clock.t) {
		t.Fatalf("heartbeat of a live worker: %+v %v", r, err)
	}
	if r, _ := h.c.heartbeat("nobody", wire.Heartbeat{}); !r.Reconnect {
		t.Error("unknown worker not told to reconnect")
	}
	h.c.removeWorker(w, "test", nil)
	if r, _ := h.c.heartbeat("w1", wire.Heartbeat{}); r.Reconnect {
		t.Error("worker told to reconnect before its removal committed")
	}
	h.commit()
	if r, _ := h.c.heartbeat("w1", wire.Heartbeat{}); !r.Reconnect {
		t.Error("expired worker not told to reconnect")
	}
}

// The seed scenario: a worker that stops heartbeating is DEAD within the
// timeout plus one tick, its executors LOST and reported to the app, and the
// cores re-placed at once, as whole executors with a unit of 4.
func TestWorkerLossReplacesExecutorsWholly(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.MinCoreUnit = 4; c.WorkerTimeout = 4 * time.Second })
	h.addWorker("w1", 8, 8192)
	h.addWorker("w2", 8, 8192)
	a := h.addApp(wire.AppDescription{Name: "job", MaxCores: 8, MemoryPerExecutorMB: 1024})
	if got := layout(a); !reflect.DeepEqual(got, []string{"w1:4", "w2:4"}) {
		t.Fatalf("initial layout %v", got)
	}
	sub, _, err := h.c.subscribe(a.rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.addWorker("w3", 8, 8192)
	h.takeSent("/v1/executors")

	// w2 falls silent; the others keep heartbeating.
	tick := h.c.cfg.tickInterval()
	deadline := h.clock.t.Add(h.c.cfg.WorkerTimeout + time.Second)
	for h.c.workers["w2"].state == wire.WorkerAlive {
		h.clock.advance(tick)
		if h.clock.t.After(deadline) {
			t.Fatal("w2 still ALIVE a second after its timeout")
		}
		h.c.heartbeat("w1", wire.Heartbeat{})
		h.c.heartbeat("w3", wire.Heartbeat{})
		h.c.tick()
		h.commit()
	}
	if h.fx.state.Workers["w2"] != nil {
		t.Error("dead worker's record not deleted")
	}
	lost := drain(sub)
	if len(lost) == 0 || lost[0].Type != wire.EventExecutorLost || lost[0].Executor.State != wire.ExecutorLost {
		t.Fatalf("app not told of the lost executor: %+v", lost)
	}
	if got := lost[0].Message; got == "" || got[:12] != "worker lost:" {
		t.Errorf("lost message %q", got)
	}
	// Replacement: 4 cores, one executor, on the worker with the most free.
	launches := h.takeSent("/v1/executors")
	if len(launches) != 1 || launches[0].worker != "w3" || launches[0].cmd.body.(wire.LaunchExecutor).Cores != 4 {
		t.Fatalf("replacement launches %+v", launches)
	}
	if got := layout(a); !reflect.DeepEqual(got, []string{"w1:4", "w3:4"}) {
		t.Fatalf("layout after the loss %v", got)
	}
	// DEAD workers stay listed, then are reaped after 15 timeouts.
	h.pass(14*h.c.cfg.WorkerTimeout, "w1", "w3")
	if h.c.workers["w2"] == nil {
		t.Error("DEAD worker reaped before 15 timeouts")
	}
	h.pass(h.c.cfg.WorkerTimeout+time.Second, "w1", "w3")
	if h.c.workers["w2"] != nil {
		t.Error("DEAD worker not reaped after 15 timeouts")
	}
}

func TestLatestStateKillsUnknownExecutors(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	e := a.executors[0]
	h.takeSent("/v1/executors")
	reply, err := h.c.workerLatestState("w1", wire.WorkerLatestState{
		WorkerID: "w1",
		Executors: []wire.ExecutorReport{
			{AppID: a.rec.ID, ExecutorID: e.id, Cores: 2, State: wire.ExecutorRunning},
			{AppID: a.rec.ID, ExecutorID: 99, Cores: 1, State: wire.ExecutorRunning},
			{AppID: "app-gone", ExecutorID: 0, Cores: 1, State: wire.ExecutorRunning},
		},
		Drivers: []wire.DriverReport{{DriverID: "driver-unknown", State: wire.DriverRunning}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.ExecutorRef{{AppID: a.rec.ID, ExecutorID: 99}, {AppID: "app-gone", ExecutorID: 0}}
	if !reflect.DeepEqual(reply.KilledExecutors, want) || !reflect.DeepEqual(reply.KilledDrivers, []string{"driver-unknown"}) {
		t.Fatalf("killed %+v %+v", reply.KilledExecutors, reply.KilledDrivers)
	}
	if kills := h.takeSent("/v1/executors/kill"); len(kills) != 2 {
		t.Fatalf("kill commands %+v", kills)
	}
	if len(w.executors) != 1 || w.coresUsed != 2 {
		t.Fatalf("known executor disturbed: %d executors, %d cores used", len(w.executors), w.coresUsed)
	}
}

func TestDriversOnWorkerLoss(t *testing.T) {
	h := newLeader(t, nil, "w1")
	submit := func(supervise bool) string {
		v, err := run(h, func(reply reply[wire.Submitted]) {
			h.c.submitDriver(wire.DriverDescription{Command: []string{"drv"}, Cores: 1, MemoryMB: 512, Supervise: supervise}, keyed{}, reply)
		})
		if err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	sup, unsup := submit(true), submit(false)
	if n := len(h.takeSent("/v1/drivers")); n != 2 {
		t.Fatalf("%d driver launches, want 2", n)
	}
	h.addWorker("w2", 4, 4096)
	h.c.removeWorker(h.c.workers["w1"], "test", nil)
	h.commit()

	old, _ := h.c.driver(sup)
	if old.State != wire.DriverRelaunching || old.RelaunchedAs == "" || old.RelaunchedAs == sup {
		t.Fatalf("supervised driver after loss: %+v", old)
	}
	relaunched, err := h.c.driver(old.RelaunchedAs)
	if err != nil || relaunched.State != wire.DriverRunning || relaunched.WorkerID != "w2" || relaunched.RelaunchOf != sup {
		t.Fatalf("relaunched driver: %+v %v", relaunched, err)
	}
	gone, _ := h.c.driver(unsup)
	if gone.State != wire.DriverError {
		t.Fatalf("unsupervised driver after loss: %+v", gone)
	}
	if launches := h.takeSent("/v1/drivers"); len(launches) != 1 || launches[0].worker != "w2" {
		t.Fatalf("relaunch commands %+v", launches)
	}
}

func TestNotLeaderAnswers(t *testing.T) {
	h := newHarness(t, nil)
	_, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, reply)
	})
	if statusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("no leader known: %v", err)
	}
	h.fx.leader = "http://127.0.0.2:7077"
	_, err = run(h, func(reply reply[wire.Submitted]) {
		h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, reply)
	})
	if se := statusErrorOf(err); se.Status != http.StatusTemporaryRedirect || se.Leader != "http://127.0.0.2:7077" {
		t.Fatalf("follower with a known leader: %v", err)
	}
	// A failed write is reported, and the app does not exist.
	h.lead(nil)
	var replyErr error
	h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, func(_ wire.Submitted, err error) { replyErr = err })
	h.failWrites(errors.New("disk full"))
	if statusOf(replyErr) != http.StatusServiceUnavailable || len(h.c.apps) != 0 {
		t.Fatalf("failed write: %v, %d apps", replyErr, len(h.c.apps))
	}
}

func drain(s *subscriber) []wire.AppEvent {
	var out []wire.AppEvent
	for {
		select {
		case ev, ok := <-s.ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

func eventTypes(evs []wire.AppEvent) []wire.EventType {
	var out []wire.EventType
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// A worker shutting down says so: nothing new is placed on it, its final
// reports still count (KILLED does not count as a failure), and it is gone
// as soon as it leaves.
func TestWorkerDecommissionAndLeave(t *testing.T) {
	h := newLeader(t, nil, "w1")
	a := h.addApp(wire.AppDescription{MaxCores: 2})
	e := a.executors[0]
	if err := h.c.decommissionWorker("w1"); err != nil {
		t.Fatal(err)
	}
	h.addWorker("w2", 4, 4096)
	h.takeSent("/v1/executors")
	h.report(e, wire.ExecutorKilled, intp(143))
	launches := h.takeSent("/v1/executors")
	if len(launches) != 1 || launches[0].worker != "w2" || a.retryCount != 0 {
		t.Fatalf("replacement %+v, retry count %d", launches, a.retryCount)
	}
	if r, _ := h.c.heartbeat("w1", wire.Heartbeat{}); r.Reconnect {
		t.Error("a decommissioned worker was told to reconnect")
	}
	if _, err := run(h, func(reply reply[wire.None]) { h.c.workerLeft("w1", reply) }); err != nil {
		t.Fatal(err)
	}
	h.commit()
	if h.c.workers["w1"].state != wire.WorkerDead || h.fx.state.Workers["w1"] != nil {
		t.Fatalf("after leaving: %s", h.c.workers["w1"].state)
	}
	if _, err := run(h, func(reply reply[wire.None]) { h.c.workerLeft("w1", reply) }); statusOf(err) != 404 {
		t.Errorf("leaving twice: %v", err)
	}
}

// A loop that did not run for a long while (the process was paused) must
// not take the silence for dead workers: it re-arms the deadlines, and only
// a worker that stays silent a full timeout after that is removed.
func TestPausedLoopDoesNotExpireWorkers(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.WorkerTimeout = 4 * time.Second }, "w1", "w2")
	a := h.addApp(wire.AppDescription{MaxCores: 2})
	sub, _, _ := h.c.subscribe(a.rec.ID)
	h.pass(time.Second, "w1", "w2")

	h.clock.advance(30 * time.Second) // SIGSTOP for 30 s
	h.c.tick()
	h.commit()
	for _, w := range h.c.workers {
		if w.state != wire.WorkerAlive {
			t.Fatalf("%s %s after a pause", w.rec.ID, w.state)
		}
	}
	if evs := drain(sub); len(evs) != 0 {
		t.Fatalf("events after a pause: %v", eventTypes(evs))
	}
	// w2 really is gone: it is removed one timeout after the pause.
	h.pass(h.c.cfg.WorkerTimeout+h.c.cfg.tickInterval(), "w1")
	if h.c.workers["w2"].state != wire.WorkerDead || h.c.workers["w1"].state != wire.WorkerAlive {
		t.Fatalf("after the timeout: w1 %s, w2 %s", h.c.workers["w1"].state, h.c.workers["w2"].state)
	}
}

// An app that could start more executors than its first id reservation
// covers gets the same layout as if ids were unlimited: it waits one write
// for a larger reservation instead of being cut off at 64 executors.
func TestLargeAppLayoutNotCutByIDReservation(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.MinCoreUnit = 4 })
	for i := range 100 {
		h.addWorker(fmt.Sprintf("w%03d", i), 8, 8192)
	}
	a := h.addApp(wire.AppDescription{MaxCores: 480, MemoryPerExecutorMB: 512})
	sizes := map[int]int{}
	for _, e := range a.executors {
		sizes[e.cores]++
	}
	// Spread at unit 4: every worker 4 cores, then 20 of them 4 more.
	if len(a.executors) != 100 || sizes[4] != 80 || sizes[8] != 20 {
		t.Fatalf("%d executors, sizes %v; want 100: 80 of 4 cores and 20 of 8", len(a.executors), sizes)
	}
}

// The list of workers by id that the timers and status walk is kept as
// workers come, expire and are forgotten: always the map's workers in id
// order, with no sort of the fleet.
func TestWorkerListFollowsTheWorkers(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.WorkerTimeout = 2 * time.Second })
	check := func(when string) {
		t.Helper()
		got, want := h.c.sortedWorkerList(), sortedWorkers(h.c.workers)
		if !slices.Equal(got, want) {
			ids := func(ws []*workerInfo) (out []string) {
				for _, w := range ws {
					out = append(out, w.rec.ID)
				}
				return out
			}
			t.Fatalf("%s: list %v, workers %v", when, ids(got), ids(want))
		}
	}
	var beating []string
	for i, n := range []int{7, 3, 11, 0, 5, 9, 1, 12, 4} {
		id := fmt.Sprintf("w%02d", n)
		h.addWorker(id, 4, 4096)
		if i%3 != 0 {
			beating = append(beating, id)
		}
	}
	check("after registrations in no order")
	h.pass(h.c.cfg.WorkerTimeout+h.c.cfg.tickInterval(), beating...)
	dead := 0
	for _, w := range h.c.workers {
		if w.state == wire.WorkerDead {
			dead++
		}
	}
	if dead != 3 {
		t.Fatalf("%d workers DEAD, want the 3 silent ones", dead)
	}
	check("after expiries")
	h.pass(reaperIterations*h.c.cfg.WorkerTimeout+h.c.cfg.tickInterval(), beating...)
	if len(h.c.workers) != len(beating) {
		t.Fatalf("%d workers kept, want the %d beating", len(h.c.workers), len(beating))
	}
	check("after the DEAD ones are forgotten")
	h.addWorker("w06", 4, 4096)
	check("after one more")
}

// A worker registering at an address forgets every DEAD worker listed
// there, not every other one (the list is edited as each is dropped): here
// one replaced while UNKNOWN and its replacement, dead since.
func TestNewWorkerForgetsEveryDeadWorkerAtItsAddress(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.WorkerTimeout = 2 * time.Second })
	x, y := h.addWorker("x", 4, 4096), h.addWorker("y", 4, 4096)
	h.pass(h.c.cfg.WorkerTimeout + h.c.cfg.tickInterval())
	if x.state != wire.WorkerDead || y.state != wire.WorkerDead {
		t.Fatalf("x %s, y %s: want both DEAD", x.state, y.state)
	}
	// Both died at x's address (y had replaced x there).
	addr := x.hostPort()
	delete(h.c.deadAt, y.hostPort())
	y.rec.Port = x.rec.Port
	h.c.deadAt[addr] = []string{"x", "y"}

	h.c.addWorker(persistence.WorkerRecord{ID: "z2", Host: x.rec.Host, Port: x.rec.Port, Cores: 4, MemoryMB: 4096}, "z2-1")
	for _, id := range []string{"x", "y"} {
		if _, ok := h.c.workers[id]; ok {
			t.Errorf("DEAD worker %s still listed after a new worker came to its address", id)
		}
	}
	if len(h.c.deadAt[addr]) != 0 {
		t.Errorf("dead at %s: %v", addr, h.c.deadAt[addr])
	}
}

// sortedWorkers is the fleet sorted by id from scratch: what the kept list
// must always equal.
func sortedWorkers(m map[string]*workerInfo) []*workerInfo {
	return slices.SortedFunc(maps.Values(m), func(a, b *workerInfo) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
}
