package master

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Cases found in review, kept so they stay fixed.

// An app with a fixed executor size and no maxCores (unlimited) wants as
// many executors as the free cores hold, not "MaxInt": its id reservation
// must not overflow, and it must start executors after a bounded number of
// writes.
func TestUnlimitedAppWithFixedExecutorSizeStarts(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 8, 8192)
	var id string
	h.c.registerApp(wire.AppDescription{Command: []string{"x"}, CoresPerExecutor: 1, MemoryPerExecutorMB: 1}, keyed{},
		func(v wire.Submitted, err error) { id = v.ID })
	writes := 0
	for ; writes < 50 && len(h.fx.pending) > 0; writes++ {
		h.step()
	}
	a := h.c.apps[id]
	if len(h.fx.pending) > 0 || len(a.executors) != 8 {
		t.Fatalf("after %d writes: %d executors (want 8), still writing %v", writes, len(a.executors), len(h.fx.pending) > 0)
	}
	if r := h.fx.state.Apps[id].ExecutorIDsReserved; r < 8 || r > 1<<20 {
		t.Fatalf("durable reservation %d", r)
	}
	// And after a failover, numbering goes on above the reservation
	// without overflowing.
	h.failover()
	b := h.c.apps[id]
	h.commit()
	if b.nextExecID < 8 || b.rec.ExecutorIDsReserved <= b.nextExecID || b.rec.ExecutorIDsReserved > 1<<20 {
		t.Fatalf("after a failover: next id %d, durable reservation %d", b.nextExecID, b.rec.ExecutorIDsReserved)
	}
}

// A limit change written while a reservation is in flight must not take
// the durable reservation back (nor the reverse): every write carries the
// desired record in full.
func TestExecutorLimitDoesNotUndoReservation(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 150, 150)
	var id string
	h.c.registerApp(wire.AppDescription{Command: []string{"x"}, CoresPerExecutor: 1, MemoryPerExecutorMB: 1, MaxCores: 150}, keyed{},
		func(v wire.Submitted, err error) { id = v.ID })
	h.step() // the app; scheduling asks for a larger reservation
	if len(h.fx.pending) != 1 {
		t.Fatalf("want the reservation pending, have %d writes", len(h.fx.pending))
	}
	h.c.setExecutorLimit(id, 1000, func(wire.ExecutorLimit, error) {})
	h.commit()
	a := h.c.apps[id]
	rec := h.fx.state.Apps[id]
	if rec.ExecutorIDsReserved < a.nextExecID || rec.ExecutorLimit == nil || *rec.ExecutorLimit != 1000 {
		t.Fatalf("ids up to %d handed out; durable reservation %d, limit %v", a.nextExecID-1, rec.ExecutorIDsReserved, rec.ExecutorLimit)
	}
}

// A worker restarted under the same id before its timeout (a new
// incarnation) lost everything it ran: its executors are LOST, not kept
// for ever with their cores.
func TestRestartedWorkerLosesItsExecutors(t *testing.T) {
	h := newLeader(t, nil)
	w := h.addWorker("w1", 4, 4096)
	a := h.addApp(wire.AppDescription{MaxCores: 4})
	sub, _, _ := h.c.subscribe(a.rec.ID)
	for _, e := range a.executors {
		h.report(e, wire.ExecutorRunning, nil)
	}
	drain(sub)
	if err := h.reregister(w, "w1-2"); err != nil {
		t.Fatal(err)
	}
	evs := drain(sub)
	if len(evs) == 0 || evs[0].Type != wire.EventExecutorLost {
		t.Fatalf("events after the restart: %v", eventTypes(evs))
	}
	w2 := h.c.workers["w1"]
	if w2 == w || w2.state != wire.WorkerAlive || len(a.executors) != 1 || sortedExecutors(a.executors)[0].worker != w2 {
		t.Fatalf("after the restart: worker %s, %d executors", w2.state, len(a.executors))
	}
	// The same incarnation again is just a retry.
	if err := h.reregister(w2, "w1-2"); err != nil || h.c.workers["w1"] != w2 {
		t.Fatalf("retry of the registration: %v", err)
	}
}

// A driver's end is acknowledged only once durable; a worker whose report
// was not acknowledged before a failover says so in its latest state, and
// the new leader ends the driver instead of relaunching it.
func TestDriverEndSurvivesFailover(t *testing.T) {
	h := newLeader(t, nil)
	w := h.addWorker("w1", 4, 4096)
	v, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.submitDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 256, Supervise: true}, keyed{}, reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	id := v.ID
	replied := false
	h.c.driverStateChanged("w1", wire.DriverStateChanged{DriverID: id, State: wire.DriverFinished, ExitCode: intp(0)}, func(wire.None, error) { replied = true })
	if replied {
		t.Fatal("the end was acknowledged before it was durable")
	}
	h.failover() // the leader dies before the write commits
	if err := h.reregister(w, "w1-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.workerLatestState("w1", wire.WorkerLatestState{WorkerID: "w1",
		Drivers: []wire.DriverReport{{DriverID: id, State: wire.DriverFinished, ExitCode: intp(0)}}}); err != nil {
		t.Fatal(err)
	}
	h.commit()
	d := h.c.completedDriver(id)
	if d == nil || d.state != wire.DriverFinished || len(h.c.drivers) != 0 {
		t.Fatalf("driver after the failover: %+v, %d active", d, len(h.c.drivers))
	}
}

// Same for an executor: its end, carried in the latest state, ends it.
func TestExecutorEndInLatestState(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	e := sortedExecutors(a.executors)[0]
	h.failover()
	h.reregister(w, "w1-1")
	_, err := h.c.workerLatestState("w1", wire.WorkerLatestState{WorkerID: "w1",
		Executors: []wire.ExecutorReport{{AppID: a.rec.ID, ExecutorID: e.id, State: wire.ExecutorFailed, ExitCode: intp(3), Message: "exited with code 3"}}})
	if err != nil {
		t.Fatal(err)
	}
	b := h.c.apps[a.rec.ID]
	if _, live := b.executors[e.id]; !live {
		t.Fatal("executor ended before its end was durable")
	}
	h.commit()
	if _, live := b.executors[e.id]; live || b.retryCount != 1 || len(h.takeSent("/v1/executors/kill")) != 0 {
		t.Fatalf("executor %d still live %v, retry count %d", e.id, live, b.retryCount)
	}
}

// A worker that has not answered a new leader is told to register first:
// its reports must not be taken before its latest state (a RUNNING report
// would find its driver unclaimed, and kill it).
func TestReportsFromUnknownWorkersWaitForRegistration(t *testing.T) {
	h := newLeader(t, nil, "w1")
	v, _ := run(h, func(reply reply[wire.Submitted]) {
		h.c.submitDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 256, Supervise: true}, keyed{}, reply)
	})
	id := v.ID
	h.failover()
	h.fx.sent = nil
	_, err := run(h, func(reply reply[wire.None]) {
		h.c.driverStateChanged("w1", wire.DriverStateChanged{DriverID: id, State: wire.DriverRunning}, reply)
	})
	if statusOf(err) != http.StatusNotFound || len(h.takeSent("/v1/drivers/kill")) != 0 {
		t.Fatalf("report from an UNKNOWN worker: %v", err)
	}
}

// Recovery ends as soon as nothing is left to wait for, also when the last
// UNKNOWN app or worker is removed rather than answering.
func TestRecoveryEndsWhenTheLastUnknownIsRemoved(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	b := h.addApp(wire.AppDescription{MaxCores: 2})
	h.failover()
	h.reregister(w, "w1-1")
	h.c.workerLatestState("w1", reportOf(h, "w1"))
	h.c.appHeartbeat(a.rec.ID)
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(b.rec.ID, wire.AppKilled, "killed", reply) }); err != nil {
		t.Fatal(err)
	}
	if h.c.status != wire.MasterAlive {
		t.Fatalf("everything answered or ended, yet the master is %s", h.c.status)
	}

	// A worker restarted during recovery (new id, same address) replaces
	// the UNKNOWN one; nothing is left to wait for.
	h2 := newLeader(t, nil)
	w1 := h2.addWorker("w1", 4, 4096)
	h2.failover()
	_, err := run(h2, func(reply reply[wire.RegisteredWorker]) {
		h2.c.registerWorker(wire.RegisterWorker{ID: "w1-restarted", Host: w1.rec.Host, Port: w1.rec.Port, Cores: 4, MemoryMB: 4096, Address: w1.rec.Address}, reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	h2.c.workerLatestState("w1-restarted", wire.WorkerLatestState{WorkerID: "w1-restarted"})
	if h2.c.status != wire.MasterAlive {
		t.Fatalf("no one left to answer, yet the master is %s", h2.c.status)
	}
}

// A stream cut for falling behind is not a client gone: the lease runs from
// the cut, so the client has the app timeout to reconnect.
func TestSlowStreamDoesNotEndTheApp(t *testing.T) {
	h := newLeader(t, nil)
	a := h.addApp(wire.AppDescription{CoresPerExecutor: 1, MemoryPerExecutorMB: 1, MaxCores: 300})
	if _, _, err := h.c.subscribe(a.rec.ID); err != nil {
		t.Fatal(err)
	}
	h.pass(2 * time.Minute)
	h.addWorker("w1", 400, 4000) // 300 executorAdded events in one pass
	if len(a.subs) != 0 {
		t.Fatal("the stream was not cut")
	}
	h.pass(h.c.cfg.tickInterval(), "w1")
	if h.c.apps[a.rec.ID] == nil {
		t.Fatalf("app ended %s: %q one tick after its stream fell behind", a.state, a.message)
	}
}

// A client that gives up on its event stream while the loop is busy leaves
// no subscriber behind to hold the app's lease.
func TestAbandonedStreamDoesNotHoldTheLease(t *testing.T) {
	m, base := runMaster(t, Config{WorkerTimeout: time.Second, AppTimeout: 300 * time.Millisecond}, nil, nil)
	ctx := t.Context()
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for id == "" && time.Now().Before(deadline) {
		v, err := call(ctx, m, func(c *core, reply reply[wire.Submitted]) {
			c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, reply)
		})
		if err == nil {
			id = v.ID
		}
	}
	if id == "" {
		t.Fatal("no app registered")
	}
	// Hold the loop; a client opens the stream and gives up; release.
	holding, release := make(chan struct{}), make(chan struct{})
	m.post(func(*core) { close(holding); <-release })
	<-holding
	rctx, rcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, base+"/v1/apps/"+id+"/events", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the stream opened while the loop was held")
	}
	rcancel()
	close(release)
	for deadline := time.Now().Add(10 * time.Second); ; {
		listed, err := query(ctx, m, func(c *core) (bool, error) { return c.apps[id] != nil, nil })
		if err == nil && !listed {
			return // the app expired: nobody held its lease
		}
		if time.Now().After(deadline) {
			t.Fatal("the app outlived its only, abandoned, client by 10 s (app timeout 300 ms)")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
