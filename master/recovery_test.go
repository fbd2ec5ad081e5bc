package master

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// cluster builds, on a first leader, two workers, an app with an executor
// on each and two running drivers (one supervised), and returns the
// durable state a second leader would read.
func cluster(t *testing.T) (*harness, *appInfo, map[string]string) {
	h := newLeader(t, nil, "w1", "w2")
	a := h.addApp(wire.AppDescription{Name: "job", MaxCores: 4})
	drivers := map[string]string{}
	for _, sup := range []bool{true, false} {
		id := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 256, Supervise: sup})
		drivers[id] = h.c.drivers[id].worker.rec.ID
	}
	if len(a.executors) != 2 {
		t.Fatalf("setup: %d executors", len(a.executors))
	}
	return h, a, drivers
}

// reportOf is what worker id would report from the first leader's view.
func reportOf(h *harness, id string) wire.WorkerLatestState {
	w := h.c.workers[id]
	r := wire.WorkerLatestState{WorkerID: id}
	for _, e := range sortedExecutors(w.executors) {
		r.Executors = append(r.Executors, wire.ExecutorReport{AppID: e.app.rec.ID, ExecutorID: e.id, Cores: e.cores, MemoryMB: e.memory, State: wire.ExecutorRunning})
	}
	for _, d := range sortedDrivers(w.drivers) {
		r.Drivers = append(r.Drivers, wire.DriverReport{DriverID: d.rec.ID, State: wire.DriverRunning})
	}
	return r
}

func TestRecoveryAdoptsEverythingThatAnswers(t *testing.T) {
	old, a, drivers := cluster(t)
	h := successor(t, old, nil)

	if h.c.status != wire.MasterRecovering || h.c.epoch != old.c.epoch+1 {
		t.Fatalf("new leader %s at epoch %d (old %d)", h.c.status, h.c.epoch, old.c.epoch)
	}
	if got := h.takeSent("/v1/reconnect"); len(got) != 2 || got[0].cmd.body.(wire.Reconnect).Epoch != h.c.epoch {
		t.Fatalf("master-changed notices %+v", got)
	}
	// Workers come back with the same id and report what they run.
	for _, id := range []string{"w1", "w2"} {
		reg := wire.RegisterWorker{ID: id, Host: "127.0.0.1", Port: old.c.workers[id].rec.Port, Cores: 4, MemoryMB: 4096, Address: old.c.workers[id].rec.Address}
		v, err := run(h, func(reply reply[wire.RegisteredWorker]) { h.c.registerWorker(reg, reply) })
		if err != nil || !v.Duplicate {
			t.Fatalf("re-registration of %s: %+v %v", id, v, err)
		}
		if h.c.workers[id].state != wire.WorkerUnknown {
			t.Fatalf("%s ALIVE before saying what it runs", id)
		}
		if _, err := h.c.workerLatestState(id, reportOf(old, id)); err != nil {
			t.Fatal(err)
		}
	}
	// Every worker said what it runs: recovery is complete. The app's
	// client has not answered yet: its app keeps its executors, gets no
	// new ones, and is not ended.
	h.commit()
	if h.c.status != wire.MasterAlive {
		t.Fatalf("status %s after every worker answered", h.c.status)
	}
	b := h.c.apps[a.rec.ID]
	if b.state != wire.AppUnknown || !reflect.DeepEqual(layout(b), layout(a)) {
		t.Fatalf("app whose client has not answered: %s with %v", b.state, layout(b))
	}
	_, first, err := h.c.subscribe(a.rec.ID)
	if err != nil || !reflect.DeepEqual(eventTypes(first), []wire.EventType{wire.EventMasterChanged, wire.EventSnapshot}) {
		t.Fatalf("client reconnect: %v %v", eventTypes(first), err)
	}
	h.commit()
	if !reflect.DeepEqual(layout(b), layout(a)) || b.state != wire.AppRunning {
		t.Fatalf("executors after recovery %v (%s), before %v", layout(b), b.state, layout(a))
	}
	if kills := h.takeSent("/v1/executors/kill"); len(kills) != 0 {
		t.Fatalf("recovery killed executors: %+v", kills)
	}
	if launches := h.takeSent("/v1/executors"); len(launches) != 0 {
		t.Fatalf("recovery launched more executors: %+v", launches)
	}
	for id, wid := range drivers {
		d, _ := h.c.driver(id)
		if d.State != wire.DriverRunning || d.WorkerID != wid {
			t.Errorf("driver %s after recovery: %+v", id, d)
		}
	}
}

// At the recovery timeout the silent workers are removed and unclaimed
// drivers end or are relaunched. An app whose client has not answered is
// not ended by recovery: its executors the workers reported keep running
// until the app's lease (--app-timeout) runs out without a sign of its
// client.
func TestRecoveryTimeoutRemovesTheSilent(t *testing.T) {
	old, a, drivers := cluster(t)
	h := successor(t, old, func(c *Config) { c.RecoveryTimeout = 5 * time.Second; c.AppTimeout = 30 * time.Second })
	// Only w1 answers; the app's client never comes back.
	reg := wire.RegisterWorker{ID: "w1", Host: "127.0.0.1", Port: old.c.workers["w1"].rec.Port, Cores: 4, MemoryMB: 4096, Address: old.c.workers["w1"].rec.Address}
	run(h, func(reply reply[wire.RegisteredWorker]) { h.c.registerWorker(reg, reply) })
	h.c.workerLatestState("w1", reportOf(old, "w1"))
	h.clock.advance(4 * time.Second)
	h.c.tick()
	if h.c.status != wire.MasterRecovering {
		t.Fatal("recovery ended before its timeout")
	}
	h.clock.advance(time.Second)
	h.c.tick()
	h.commit()
	if h.c.status != wire.MasterAlive || h.c.workers["w2"].state != wire.WorkerDead || h.c.workers["w1"].state != wire.WorkerAlive {
		t.Fatalf("after the timeout: %s, w1 %s, w2 %s", h.c.status, h.c.workers["w1"].state, h.c.workers["w2"].state)
	}
	st, _ := h.c.app(a.rec.ID)
	if st.State != wire.AppUnknown || len(h.c.apps[a.rec.ID].executors) != 1 || len(h.takeSent("/v1/executors/kill")) != 0 {
		t.Fatalf("app whose client has not come back, at the recovery timeout: %s, %d executors", st.State, len(h.c.apps[a.rec.ID].executors))
	}
	h.pass(29*time.Second, "w1")
	if st, _ := h.c.app(a.rec.ID); st.State != wire.AppUnknown {
		t.Fatalf("app ended within its lease: %s %s", st.State, st.Message)
	}
	h.pass(2*time.Second, "w1")
	done, _ := h.c.app(a.rec.ID)
	if done.State != wire.AppFinished || len(h.takeSent("/v1/executors/kill")) != 1 {
		t.Fatalf("app whose client never came back, past its lease: %s", done.State)
	}
	for id, wid := range drivers {
		d, _ := h.c.driver(id)
		if wid == "w1" {
			continue // claimed
		}
		want := wire.DriverError
		if h.fx.state.Drivers[id].Desc.Supervise {
			want = wire.DriverRelaunching
		}
		if d.State != want {
			t.Errorf("unclaimed driver %s (supervise %v): %s, want %s", id, d.State == wire.DriverRelaunching, d.State, want)
		}
	}
}

// A worker restarted during recovery registers at its old address with a new
// id; it replaces the UNKNOWN entry (seed 004).
func TestWorkerRestartedDuringRecoveryReplacesOldEntry(t *testing.T) {
	old, _, _ := cluster(t)
	h := successor(t, old, nil)
	w1 := old.c.workers["w1"].rec
	reg := wire.RegisterWorker{ID: "w1-restarted", Host: w1.Host, Port: w1.Port, Cores: 4, MemoryMB: 4096, Address: w1.Address}
	if _, err := run(h, func(reply reply[wire.RegisteredWorker]) { h.c.registerWorker(reg, reply) }); err != nil {
		t.Fatalf("restarted worker refused: %v", err)
	}
	if h.c.workers["w1"].state != wire.WorkerDead || h.c.workers["w1-restarted"].state != wire.WorkerAlive {
		t.Fatalf("old %s new %s", h.c.workers["w1"].state, h.c.workers["w1-restarted"].state)
	}
}

func TestEmptyStateIsAliveAtOnce(t *testing.T) {
	h := newLeader(t, nil)
	if h.c.status != wire.MasterAlive {
		t.Fatalf("status %s with nothing to recover", h.c.status)
	}
}

// Leadership lost and regained before the first preparation finished: the
// stale preparation is ignored, only the latest one counts.
func TestFlappingLeadership(t *testing.T) {
	h := newHarness(t, nil)
	h.c.elected()
	first := h.c.gen
	h.c.revoked()
	h.c.elected()
	s := persistence.NewState()
	s.Epoch = 7
	h.c.leadershipReady(first, s, nil)
	if h.c.status == wire.MasterAlive || h.c.epoch == 7 {
		t.Fatal("a stale leadership's state was used")
	}
	s.Epoch = 8
	h.c.leadershipReady(h.c.gen, s, nil)
	if h.c.status != wire.MasterAlive || h.c.epoch != 8 {
		t.Fatalf("current leadership: %s epoch %d", h.c.status, h.c.epoch)
	}
}

func TestRevocationStopsEverything(t *testing.T) {
	h := newLeader(t, nil, "w1")
	a := h.addApp(wire.AppDescription{MaxCores: 1})
	sub, _, _ := h.c.subscribe(a.rec.ID)

	// A registration in flight when leadership goes: it was committed, so
	// its client still gets the id; the new leader will recover the app.
	var got *wire.Submitted
	h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, func(v wire.Submitted, err error) { got = &v })
	// And a kill whose write fails.
	var killErr error
	killReply := func(_ wire.AppStatus, err error) { killErr = err }
	h.c.revoked()
	if h.fx.dropped != 1 || h.c.status != wire.MasterStandby || len(h.c.apps) != 0 {
		t.Fatalf("after revocation: dropped %d, status %s, %d apps", h.fx.dropped, h.c.status, len(h.c.apps))
	}
	if _, open := <-sub.ch; open {
		t.Error("app stream left open by a deposed leader")
	}
	h.commit()
	if got == nil || got.ID == "" {
		t.Fatalf("committed registration answered %v", got)
	}
	if len(h.c.apps) != 0 {
		t.Fatal("a deposed leader added the app to its state")
	}
	h.c.endApp(a.rec.ID, wire.AppKilled, "", killReply)
	if statusOf(killErr) != http.StatusServiceUnavailable {
		t.Fatalf("write on a follower: %v", killErr)
	}
	h.sentAfterRevocation()
}

// sentAfterRevocation checks nothing was sent after the revocation.
func (h *harness) sentAfterRevocation() {
	before := len(h.fx.sent)
	h.c.tick()
	h.c.runSchedule()
	if len(h.fx.sent) != before {
		h.t.Fatalf("a follower sent %d commands", len(h.fx.sent)-before)
	}
}

// Executor placements are durable, so a new leader knows what a worker had
// even if the worker never answers: at the recovery timeout its executors
// are LOST and the app (whose client came back) is told. An executor its
// worker no longer runs after the failover is LOST as soon as the worker
// reports.
func TestRecoveryReportsExecutorsOfSilentWorkersLost(t *testing.T) {
	old, a, _ := cluster(t)
	if n := len(old.fx.state.Executors); n != 2 {
		t.Fatalf("%d executor records before the failover, want 2", n)
	}
	h := successor(t, old, func(c *Config) { c.RecoveryTimeout = 5 * time.Second })
	sub, _, err := h.c.subscribe(a.rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(h.c.apps[a.rec.ID].executors); got != 2 {
		t.Fatalf("new leader knows %d executors of the app, want 2", got)
	}
	// w1 answers but no longer runs its executor; w2 never answers.
	report := reportOf(old, "w1")
	gone := report.Executors[0]
	report.Executors = nil
	reg := wire.RegisterWorker{ID: "w1", Host: "127.0.0.1", Port: old.c.workers["w1"].rec.Port, Cores: 4, MemoryMB: 4096, Address: old.c.workers["w1"].rec.Address}
	run(h, func(reply reply[wire.RegisteredWorker]) { h.c.registerWorker(reg, reply) })
	if _, err := h.c.workerLatestState("w1", report); err != nil {
		t.Fatal(err)
	}
	if evs := drain(sub); len(evs) != 0 {
		t.Fatalf("client told before the executor's end was durable: %v", eventTypes(evs))
	}
	h.commit()
	evs := drain(sub)
	if len(evs) != 1 || evs[0].Type != wire.EventExecutorLost || evs[0].Executor.ID != gone.ExecutorID {
		t.Fatalf("events after w1 answered: %+v", evs)
	}
	h.pass(5 * time.Second)
	if h.c.status != wire.MasterAlive {
		t.Fatalf("status %s after the recovery timeout", h.c.status)
	}
	evs = drain(sub)
	var lost []wire.AppEvent
	for _, ev := range evs {
		if ev.Type == wire.EventExecutorLost {
			lost = append(lost, ev)
		}
	}
	if len(lost) != 1 || lost[0].Executor.WorkerID != "w2" || lost[0].Message[:12] != "worker lost:" {
		t.Fatalf("events at the recovery timeout: %v", eventTypes(evs))
	}
	// The records follow: nothing is left of the two lost executors.
	for k, r := range h.fx.state.Executors {
		if r.AppID == a.rec.ID && (r.ID == gone.ExecutorID || r.WorkerID == "w2") {
			t.Errorf("record %s of a lost executor kept", k)
		}
	}
}
