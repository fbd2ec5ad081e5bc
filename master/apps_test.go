package master

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

func TestAppRegistrationWaitsForTheWrite(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.DefaultCores = 3 })
	h.addWorker("w1", 8, 8192)
	var reply *wire.Submitted
	h.c.registerApp(wire.AppDescription{Name: "a", Command: []string{"x"}}, keyed{}, func(v wire.Submitted, err error) { reply = &v })
	if reply != nil || len(h.c.apps) != 0 || len(h.fx.sent) != 0 {
		t.Fatal("app visible or scheduled before its record was durable")
	}
	h.commit()
	id := reply.ID
	a := h.c.apps[id]
	if a == nil || h.fx.state.Apps[id] == nil {
		t.Fatal("app missing after commit")
	}
	// Defaults: --default-cores and 1024 MB executors.
	if a.rec.Desc.MaxCores != 3 || a.rec.Desc.MemoryPerExecutorMB != 1024 {
		t.Errorf("defaults not applied: %+v", a.rec.Desc)
	}
	if got := layout(a); !reflect.DeepEqual(got, []string{"w1:3"}) || a.state != wire.AppRunning {
		t.Errorf("layout %v state %s", got, a.state)
	}
}

// SPARK-27510: an executor command that always fails ends the app after
// --max-executor-retries instead of relaunching for ever. Only an executor
// that stays RUNNING resets the count: a command that starts and exits
// non-zero at once is RUNNING for a moment every time, and must still fail
// the app.
func TestExecutorRetryLimit(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.MaxExecutorRetries = 3 }, "w1")
	a := h.addApp(wire.AppDescription{MaxCores: 1})
	fail := func(a *appInfo, runFor time.Duration) {
		t.Helper()
		// Fast failures put the app in a relaunch backoff: wait it out.
		for i := 0; len(a.executors) == 0 && i < int(relaunchBackoffMax/(100*time.Millisecond)); i++ {
			h.pass(100*time.Millisecond, "w1")
		}
		for _, e := range a.executors {
			h.report(e, wire.ExecutorRunning, nil)
			h.pass(runFor, "w1")
			h.report(e, wire.ExecutorFailed, intp(3))
			return
		}
		t.Fatal("no executor to fail")
	}
	fail(a, 0)
	fail(a, 0)
	fail(a, 10*time.Second) // ran stably: the count restarts with this failure
	if a.retryCount != 1 || a.state.Finished() {
		t.Fatalf("retry count %d (%s) after a stable executor failed, want 1", a.retryCount, a.state)
	}
	fail(a, 0)
	fail(a, 0)
	if a.state != wire.AppFailed || h.c.apps[a.rec.ID] != nil {
		t.Fatalf("app %s after 3 failures in a row", a.state)
	}
	if rec := h.fx.state.Apps[a.rec.ID]; rec == nil || rec.State != wire.AppFailed {
		t.Fatalf("final record %+v", rec)
	}
	launches := len(h.takeSent("/v1/executors"))

	// A command that dies the moment it starts.
	b := h.addApp(wire.AppDescription{MaxCores: 1})
	for range 3 {
		fail(b, 0)
	}
	if b.state != wire.AppFailed {
		t.Fatalf("app whose executors die at once: %s after 3 failures", b.state)
	}
	if n := len(h.takeSent("/v1/executors")); n != 3 {
		t.Fatalf("%d launches for the second app, want 3 (and %d for the first)", n, launches)
	}
	// Exit 0 frees cores without counting.
	c := h.addApp(wire.AppDescription{MaxCores: 1})
	for _, e := range c.executors {
		h.report(e, wire.ExecutorExited, intp(0))
	}
	if c.retryCount != 0 || c.state.Finished() {
		t.Fatalf("clean exit counted: retry %d state %s", c.retryCount, c.state)
	}
}

func TestKillAppKillsExecutorsAndTellsWorkers(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	sub, first, _ := h.c.subscribe(a.rec.ID)
	if !reflect.DeepEqual(eventTypes(first), []wire.EventType{wire.EventSnapshot}) {
		t.Fatalf("first events %v", eventTypes(first))
	}
	if !first[0].Time.Equal(h.clock.t) {
		t.Errorf("snapshot made at %v, the master's clock says %v", first[0].Time, h.clock.t)
	}
	h.fx.sent = nil
	h.clock.advance(time.Second)
	v, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", reply) })
	if err != nil || v.State != wire.AppKilled {
		t.Fatalf("kill: %+v %v", v, err)
	}
	if w.coresUsed != 0 {
		t.Errorf("cores not freed: %d used", w.coresUsed)
	}
	if len(h.takeSent("/v1/executors/kill")) != 1 || len(h.takeSent("/v1/apps/finished")) != 1 {
		t.Errorf("commands %+v", h.fx.sent)
	}
	evs := drain(sub)
	if len(evs) == 0 || evs[len(evs)-1].Type != wire.EventAppRemoved {
		t.Fatalf("client not told: %v", eventTypes(evs))
	}
	if at := evs[len(evs)-1].Time; !at.Equal(h.clock.t) {
		t.Errorf("appRemoved made at %v, the master's clock says %v", at, h.clock.t)
	}
	if _, open := <-sub.ch; open {
		t.Error("stream not closed after appRemoved")
	}
	// Killing it again answers with its final status; unknown ids are 404.
	if v, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppKilled, "", reply) }); err != nil || v.State != wire.AppKilled {
		t.Errorf("second kill: %v %v", v, err)
	}
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp("app-nope", wire.AppKilled, "", reply) }); statusOf(err) != http.StatusNotFound {
		t.Errorf("unknown app: %v", err)
	}
}

func TestAppLease(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.AppTimeout = 10 * time.Second })
	a := h.addApp(wire.AppDescription{})
	sub, _, _ := h.c.subscribe(a.rec.ID)
	h.pass(time.Minute)
	if a.state.Finished() {
		t.Fatal("app with an open stream expired")
	}
	h.c.unsubscribe(a.rec.ID, sub)
	h.pass(9 * time.Second)
	if err := h.c.appHeartbeat(a.rec.ID); err != nil { // a heartbeat renews the lease
		t.Fatal(err)
	}
	h.pass(9 * time.Second)
	if a.state.Finished() {
		t.Fatal("app expired although its client heartbeat")
	}
	h.pass(2 * time.Second)
	if a.state != wire.AppFinished {
		t.Fatalf("app %s after its client was gone past the timeout", a.state)
	}
}

func TestDynamicAllocation(t *testing.T) {
	h := newLeader(t, nil)
	for _, id := range []string{"w1", "w2", "w3"} {
		h.addWorker(id, 4, 4096)
	}
	a := h.addApp(wire.AppDescription{CoresPerExecutor: 1, InitialExecutorLimit: intp(2)})
	if len(a.executors) != 2 {
		t.Fatalf("%d executors under an initial limit of 2", len(a.executors))
	}
	if _, err := run(h, func(reply reply[wire.ExecutorLimit]) { h.c.setExecutorLimit(a.rec.ID, 5, reply) }); err != nil {
		t.Fatal(err)
	}
	if len(a.executors) != 5 || *h.fx.state.Apps[a.rec.ID].ExecutorLimit != 5 {
		t.Fatalf("%d executors after raising the limit to 5", len(a.executors))
	}
	if _, err := run(h, func(reply reply[wire.ExecutorLimit]) { h.c.setExecutorLimit(a.rec.ID, 3, reply) }); err != nil {
		t.Fatal(err)
	}
	res, err := run(h, func(reply reply[wire.KillExecutors]) { h.c.killExecutors(a.rec.ID, []int{0, 1, 77}, reply) })
	if err != nil || !reflect.DeepEqual(res.ExecutorIDs, []int{0, 1}) {
		t.Fatalf("kill executors: %+v %v", res, err)
	}
	if len(a.executors) != 3 {
		t.Fatalf("%d executors after killing 2 of 5 under a limit of 3", len(a.executors))
	}
}

// Executor ids are reserved in blocks through the log, so a new leader never
// hands out an id an earlier leader may have used.
func TestExecutorIDsNeverReused(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 200, 1<<20)
	a := h.addApp(wire.AppDescription{CoresPerExecutor: 1, MemoryPerExecutorMB: 1, MaxCores: 150})
	if len(a.executors) != 150 {
		t.Fatalf("%d executors, want 150 (ids reserved as needed)", len(a.executors))
	}
	reserved := h.fx.state.Apps[a.rec.ID].ExecutorIDsReserved
	if reserved < 150 {
		t.Fatalf("reserved %d ids for 150 executors", reserved)
	}
	// A new leader starts numbering above the reservation.
	h2 := successor(t, h, nil)
	b := h2.c.apps[a.rec.ID]
	if b.nextExecID != reserved {
		t.Fatalf("new leader starts at %d, want %d", b.nextExecID, reserved)
	}
}
