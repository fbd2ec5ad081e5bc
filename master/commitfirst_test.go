package master

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Commit-first (commit.go): nothing is seen, acknowledged or sent to a
// worker before its write is durable, and a write that fails leaves the
// master as it was.

var errTransfer = errors.New("leadership transfer in progress")

// notLeaderErr is how a write refused by a master that stopped leading
// fails.
func notLeaderErr() error { return errors.Join(persistence.ErrNotLeader, errTransfer) }

// A kill whose write fails must not be seen, acknowledged or acted on: the
// app stays active, its executors run, its client hears nothing, and a
// repeated kill is decided against the committed state (it writes again)
// instead of answering KILLED from memory.
func TestFailedKillLeavesAppAsItWas(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	sub, _, _ := h.c.subscribe(a.rec.ID)
	h.fx.sent = nil

	var got error
	replied := false
	h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", func(_ wire.AppStatus, err error) { got, replied = err, true })
	// In flight: nothing visible, nothing sent.
	if st, _ := h.c.app(a.rec.ID); st.State.Finished() || replied {
		t.Fatalf("kill visible before its write committed: %s (replied %v)", st.State, replied)
	}
	if len(h.fx.sent) != 0 || len(drain(sub)) != 0 {
		t.Fatalf("sent %v before the kill committed", h.fx.sent)
	}
	// A repeat while in flight waits for the same outcome.
	var repeat error
	repeated := false
	h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", func(_ wire.AppStatus, err error) { repeat, repeated = err, true })
	if repeated {
		t.Fatal("repeated kill answered before the first one's write finished")
	}
	h.failWrites(notLeaderErr())
	if !replied || got == nil || !repeated || repeat == nil {
		t.Fatalf("failed kill answered %v, repeat %v", got, repeat)
	}
	if st, _ := h.c.app(a.rec.ID); st.State != wire.AppRunning || len(a.executors) != 1 || w.coresUsed != 2 {
		t.Fatalf("after the failed kill: %s, %d executors, %d cores used", st.State, len(a.executors), w.coresUsed)
	}
	if len(h.fx.sent) != 0 || len(drain(sub)) != 0 {
		t.Fatalf("failed kill sent %v", h.fx.sent)
	}
	if rec := h.fx.state.Apps[a.rec.ID]; rec.Finished() {
		t.Fatal("failed kill reached the state")
	}
	// The next kill writes again, and this time it holds.
	v, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", reply) })
	if err != nil || v.State != wire.AppKilled || h.fx.state.Apps[a.rec.ID].State != wire.AppKilled {
		t.Fatalf("second kill: %+v %v", v, err)
	}
	if len(h.takeSent("/v1/executors/kill")) != 1 {
		t.Fatal("executor not killed once the kill committed")
	}
}

// A kill of chosen executors (dynamic allocation) whose write fails leaves
// them as they were: still listed, their cores held, nothing sent to their
// worker nor told to the app's client; a repeat writes again and holds.
func TestFailedExecutorKillLeavesThemRunning(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	sub, _, _ := h.c.subscribe(a.rec.ID)
	h.fx.sent = nil
	var eid int
	for id := range a.executors {
		eid = id
	}
	var got error
	replied := false
	h.c.killExecutors(a.rec.ID, []int{eid}, func(_ wire.KillExecutors, err error) { got, replied = err, true })
	if replied || len(h.fx.sent) != 0 || len(drain(sub)) != 0 {
		t.Fatalf("executor kill answered (%v) or sent %v before its write committed", replied, h.fx.sent)
	}
	h.failWrites(notLeaderErr())
	if !replied || got == nil {
		t.Fatalf("failed executor kill answered %v", got)
	}
	if len(a.executors) != 1 || w.coresUsed != 2 || len(h.fx.sent) != 0 || len(drain(sub)) != 0 {
		t.Fatalf("after the failed kill: %d executors, %d cores used, sent %v", len(a.executors), w.coresUsed, h.fx.sent)
	}
	v, err := run(h, func(reply reply[wire.KillExecutors]) { h.c.killExecutors(a.rec.ID, []int{eid}, reply) })
	if err != nil || !slices.Equal(v.ExecutorIDs, []int{eid}) {
		t.Fatalf("second executor kill: %+v %v", v, err)
	}
	// (The app still wants its cores: the round may place a new executor.)
	if _, listed := a.executors[eid]; listed || len(h.takeSent("/v1/executors/kill")) != 1 {
		t.Fatalf("durable executor kill: executor %d listed %v, kill not sent once", eid, listed)
	}
}

// A write of an app decided while its end is in flight (a limit change)
// is made only if the end fails; after a durable end it is refused, and
// it could never bring the app back in the log.
func TestLimitChangeDuringEndWaitsForIt(t *testing.T) {
	h := newLeader(t, nil)
	a := h.addApp(wire.AppDescription{MaxCores: 2})
	h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", func(wire.AppStatus, error) {})
	var limitErr error
	h.c.setExecutorLimit(a.rec.ID, 7, func(_ wire.ExecutorLimit, err error) { limitErr = err })
	if n := len(h.fx.pending); n != 1 {
		t.Fatalf("%d writes of the app in flight at once, want 1", n)
	}
	h.commit()
	var se *httpx.StatusError
	if !errors.As(limitErr, &se) || se.Status != http.StatusConflict {
		t.Fatalf("limit change after the end: %v, want 409", limitErr)
	}
	if rec := h.fx.state.Apps[a.rec.ID]; rec.State != wire.AppKilled || rec.ExecutorLimit != nil {
		t.Fatalf("record after end and limit: %+v", rec)
	}
}

// A limit change whose write fails is not carried by the app's next write.
func TestFailedLimitChangeIsNotCarriedLater(t *testing.T) {
	h := newLeader(t, nil)
	a := h.addApp(wire.AppDescription{MaxCores: 2})
	var err1 error
	h.c.setExecutorLimit(a.rec.ID, 3, func(_ wire.ExecutorLimit, err error) { err1 = err })
	if a.rec.ExecutorLimit != nil {
		t.Fatal("limit changed in memory before its write committed")
	}
	h.failWrites(errors.New("disk full"))
	if err1 == nil || a.rec.ExecutorLimit != nil {
		t.Fatalf("failed limit change: err %v, limit %v", err1, a.rec.ExecutorLimit)
	}
	if _, err := run(h, func(reply reply[wire.ExecutorLimit]) { h.c.setExecutorLimit(a.rec.ID, 9, reply) }); err != nil {
		t.Fatal(err)
	}
	h.c.endApp(a.rec.ID, wire.AppFinished, "done", func(wire.AppStatus, error) {})
	h.commit()
	if l := h.fx.state.Apps[a.rec.ID].ExecutorLimit; l == nil || *l != 9 {
		t.Fatalf("durable limit %v, want 9", l)
	}
}

// An executor is launched, and shown, only once its placement is durable;
// a placement that fails to commit launches nothing and frees its cores.
func TestExecutorLaunchWaitsForItsPlacement(t *testing.T) {
	h := newLeader(t, nil)
	w := h.addWorker("w1", 4, 4096)
	var id string
	h.c.registerApp(wire.AppDescription{Command: []string{"x"}, MaxCores: 2}, keyed{}, func(v wire.Submitted, _ error) { id = v.ID })
	h.step() // the app is durable; the scheduling pass places one executor
	a := h.c.apps[id]
	if len(a.executors) != 1 || w.coresUsed != 2 {
		t.Fatalf("placement not reserved: %d executors, %d cores", len(a.executors), w.coresUsed)
	}
	if len(h.takeSent("/v1/executors")) != 0 {
		t.Fatal("launch sent before the placement committed")
	}
	st, _ := h.c.app(id)
	ws := workerStatus(w)
	if len(st.Executors) != 0 || st.CoresGranted != 0 || ws.CoresUsed != 0 {
		t.Fatalf("uncommitted placement shown: %d executors, %d cores granted, worker uses %d", len(st.Executors), st.CoresGranted, ws.CoresUsed)
	}
	h.failWrites(errors.New("disk full"))
	if len(h.takeSent("/v1/executors")) != 0 {
		t.Fatal("launch sent although its placement failed")
	}
	// The cores came back and the next pass places the executor again.
	h.commit()
	if len(a.executors) != 1 || w.coresUsed != 2 || len(h.takeSent("/v1/executors")) != 1 {
		t.Fatalf("after the retry: %d executors, %d cores", len(a.executors), w.coresUsed)
	}
	if st, _ := h.c.app(id); len(st.Executors) != 1 || st.CoresGranted != 2 {
		t.Fatalf("committed placement not shown: %+v", st)
	}
}

// A worker removal that fails to commit leaves the worker, its executors
// and its drivers as they were, and tells nobody anything.
func TestFailedWorkerRemovalChangesNothing(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	sub, _, _ := h.c.subscribe(a.rec.ID)
	h.fx.sent = nil
	h.c.removeWorker(w, "test", nil)
	if len(h.c.aliveWorkers()) != 0 {
		t.Fatal("a worker being removed still takes work")
	}
	h.failWrites(notLeaderErr())
	if w.state != wire.WorkerAlive || len(a.executors) != 1 || len(drain(sub)) != 0 || len(h.fx.sent) != 0 {
		t.Fatalf("after a failed removal: worker %s, %d executors", w.state, len(a.executors))
	}
	if len(h.c.aliveWorkers()) != 1 {
		t.Fatal("worker not schedulable again after its removal failed")
	}
	h.c.removeWorker(w, "test", nil)
	h.commit()
	evs := drain(sub)
	if w.state != wire.WorkerDead || len(evs) == 0 || evs[0].Type != wire.EventExecutorLost {
		t.Fatalf("after the removal committed: worker %s, events %v", w.state, eventTypes(evs))
	}
}

// A kill of a running driver is durable before the worker is told or the
// request answered; a new leader then kills the driver when its worker
// reports it, and ends it KILLED, not relaunched, if no worker claims it.
func TestDriverKillIsDurable(t *testing.T) {
	h := newLeader(t, nil)
	w := h.addWorker("w1", 4, 4096)
	id := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Supervise: true})
	if len(h.takeSent("/v1/drivers")) != 1 {
		t.Fatal("driver not launched")
	}
	replied := false
	h.c.killDriver(id, func(wire.DriverStatus, error) { replied = true })
	if replied || len(h.takeSent("/v1/drivers/kill")) != 0 {
		t.Fatal("kill answered or sent before it was durable")
	}
	h.commit()
	if !replied || len(h.takeSent("/v1/drivers/kill")) != 1 || !h.fx.state.Drivers[id].KillRequested {
		t.Fatal("durable kill not answered or not sent")
	}
	if st, _ := h.c.driver(id); !st.KillRequested || st.State != wire.DriverRunning {
		t.Fatalf("driver after its kill was accepted: %+v", st)
	}
	// The master fails over before the worker killed it: the new leader
	// kills it when the worker reports it running.
	h.failover()
	h.reregister(w, "w1-1")
	if _, err := h.c.workerLatestState("w1", wire.WorkerLatestState{WorkerID: "w1",
		Drivers: []wire.DriverReport{{DriverID: id, State: wire.DriverRunning}}}); err != nil {
		t.Fatal(err)
	}
	if len(h.takeSent("/v1/drivers/kill")) != 1 {
		t.Fatal("new leader did not kill a driver whose kill was acknowledged")
	}
	// Another failover, and this time no worker claims it: KILLED, not
	// relaunched although it is supervised.
	h.failover()
	h.c.completeRecovery()
	h.commit()
	if st, _ := h.c.driver(id); st.State != wire.DriverKilled || st.RelaunchedAs != "" {
		t.Fatalf("unclaimed driver whose kill was acknowledged: %s relaunched as %q", st.State, st.RelaunchedAs)
	}
}

// A kill of a waiting driver ends it only once durable; until then the
// scheduler does not launch it either.
func TestWaitingDriverKillHoldsItsLaunch(t *testing.T) {
	h := newLeader(t, nil)
	id := h.addDriver(wire.DriverDescription{Command: []string{"d"}})
	var status *wire.DriverStatus
	h.c.killDriver(id, func(v wire.DriverStatus, _ error) { status = &v })
	h.addWorkerNoCommit("w1")
	if len(h.takeSent("/v1/drivers")) != 0 {
		t.Fatal("driver launched while its kill was in flight")
	}
	if st, _ := h.c.driver(id); st.State != wire.DriverSubmitted {
		t.Fatalf("driver %s before its kill committed", st.State)
	}
	h.commit()
	if status == nil || status.State != wire.DriverKilled || len(h.takeSent("/v1/drivers")) != 0 {
		t.Fatalf("kill of a waiting driver: %+v", status)
	}
}

// addWorkerNoCommit registers a worker, committing only its own record
// (the harness's addWorker commits every pending write).
func (h *harness) addWorkerNoCommit(id string) {
	h.t.Helper()
	before := len(h.fx.pending)
	h.c.registerWorker(wire.RegisterWorker{ID: id, Host: "127.0.0.1", Port: 19999, Cores: 4, MemoryMB: 4096, Address: "http://127.0.0.1:19999", Incarnation: id}, func(wire.RegisteredWorker, error) {})
	p := h.fx.pending[before]
	h.fx.pending = append(h.fx.pending[:before], h.fx.pending[before+1:]...)
	for _, c := range p.cmds {
		if err := h.fx.state.Apply(c, nil); err != nil {
			h.t.Fatal(err)
		}
	}
	p.then(nil)
	h.c.runSchedule()
}

// An executor's end reported by its worker is told to its app's client and
// frees its cores only once durable; the report is acknowledged then.
func TestExecutorEndWaitsForItsWrite(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	e := sortedExecutors(a.executors)[0]
	sub, _, _ := h.c.subscribe(a.rec.ID)
	acked := false
	h.c.executorStateChanged("w1", wire.ExecutorStateChanged{AppID: a.rec.ID, ExecutorID: e.id, State: wire.ExecutorExited, ExitCode: intp(0)},
		func(_ wire.None, err error) { acked = err == nil })
	if acked || len(drain(sub)) != 0 || w.coresUsed != 2 {
		t.Fatal("executor end visible before its write committed")
	}
	h.commit()
	if !acked || a.executors[e.id] != nil || h.fx.state.Executors[persistence.ExecutorKey(a.rec.ID, e.id)] != nil {
		t.Fatal("executor end not applied once durable")
	}
	evs := drain(sub)
	if len(evs) == 0 || evs[0].Type != wire.EventExecutorUpdated || evs[0].Executor.State != wire.ExecutorExited {
		t.Fatalf("events after the end committed: %v", eventTypes(evs))
	}
}

// A leader that dies between a driver's launch record and the launch
// command leaves a driver recorded RUNNING that never started. The new
// leader learns it from the worker: the same worker process answers
// without it, so the driver waits and is launched again. Had the worker
// process been replaced, the driver was lost with it.
func TestDriverWhoseLaunchNeverArrivedWaitsAgain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		incarnation string
		want        wire.DriverState
	}{
		{"same worker process", "w1-1", wire.DriverRunning},
		{"worker process replaced", "w1-2", wire.DriverError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLeader(t, nil)
			w := h.addWorker("w1", 4, 4096)
			id := h.addDriver(wire.DriverDescription{Command: []string{"d"}})
			h.fx.sent = nil // the launch command is lost with the leader
			if rec := h.fx.state.Drivers[id]; rec.State != wire.DriverRunning || rec.WorkerIncarnation != "w1-1" {
				t.Fatalf("launch record %+v", rec)
			}
			h.failover()
			if err := h.reregister(w, tc.incarnation); err != nil {
				t.Fatal(err)
			}
			if _, err := h.c.workerLatestState("w1", wire.WorkerLatestState{WorkerID: "w1"}); err != nil {
				t.Fatal(err)
			}
			h.commit()
			st, _ := h.c.driver(id)
			if st.State != tc.want {
				t.Fatalf("driver after the failover: %s (%s), want %s", st.State, st.Message, tc.want)
			}
			if launched := len(h.takeSent("/v1/drivers")); (tc.want == wire.DriverRunning) != (launched == 1) {
				t.Fatalf("%d launches after the failover", launched)
			}
		})
	}
}
