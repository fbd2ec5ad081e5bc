package master

import (
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// An executor killed because its whole app ended says what ended it, in
// the app's final record (what a later leader lists), in its status and in
// its appRemoved event; its reason cell was empty.
func TestExecutorsEndedWithTheirAppSayWhy(t *testing.T) {
	for _, tc := range []struct {
		end  func(h *harness, id string)
		want string
	}{
		{func(h *harness, id string) {
			run(h, func(r reply[wire.AppStatus]) { h.c.endApp(id, wire.AppKilled, "killed by request", r) })
		}, "app killed: killed by request"},
		{func(h *harness, id string) {
			run(h, func(r reply[wire.AppStatus]) { h.c.endApp(id, wire.AppFinished, "unregistered by its client", r) })
		}, "app finished: unregistered by its client"},
	} {
		h, _, a := leaderWithOneApp(t)
		h.running(a)
		if len(a.executors) == 0 {
			t.Fatal("the app has no executor to end")
		}
		sub, _, err := h.c.subscribe(a.rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		tc.end(h, a.rec.ID)
		st := mustAppStatus(t, h, a.rec.ID)
		for _, e := range st.Executors {
			if e.State != wire.ExecutorKilled || e.Message != tc.want {
				t.Errorf("status: executor %d ended %s %q, want KILLED %q", e.ID, e.State, e.Message, tc.want)
			}
		}
		var removed *wire.AppStatus
		for _, ev := range drain(sub) {
			if ev.Type == wire.EventAppRemoved {
				removed = ev.App
			}
		}
		if removed == nil || len(removed.Executors) == 0 {
			t.Fatalf("no appRemoved event with the executors: %+v", removed)
		}
		for _, e := range removed.Executors {
			if e.Message != tc.want {
				t.Errorf("appRemoved: executor %d ended %q, want %q", e.ID, e.Message, tc.want)
			}
		}
		rec := h.fx.state.Apps[a.rec.ID]
		if rec == nil || len(rec.Executors) == 0 {
			t.Fatalf("final record %+v lists no executor", rec)
		}
		for _, e := range rec.Executors {
			if e.State != wire.ExecutorKilled || e.Message != tc.want {
				t.Errorf("final record: executor %d ended %s %q, want KILLED %q", e.ID, e.State, e.Message, tc.want)
			}
		}
		h2 := successor(t, h, nil)
		for _, e := range mustAppStatus(t, h2, a.rec.ID).Executors {
			if e.Message != tc.want {
				t.Errorf("a later leader lists executor %d ended %q, want %q", e.ID, e.Message, tc.want)
			}
		}
	}
}

// A preempted executor ends with one reason, exactly: the preemption and
// the exit code its worker reported, not its worker's "killed by the
// master (...)" nested inside it. What docs/QUEUES.md quotes.
func TestAPreemptedExecutorsMessage(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.PreemptionDelay = 10 * time.Second; c.PreemptionGrace = 3 * time.Second })
	h.addWorker("w1", 2, 2048)
	h.setQueue("batch", wire.QueueSpec{})
	h.setQueue("etl", wire.QueueSpec{})
	batch := h.addApp(oneCoreApp("batch", 0))
	h.running(batch)
	h.addApp(oneCoreApp("etl", 0))
	h.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	h.pass(11*time.Second, "w1")
	kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	if len(kills) != 1 {
		t.Fatalf("%d executors preempted, want 1", len(kills))
	}
	e := batch.executors[kills[0].cmd.body.(wire.KillExecutor).ExecutorID]
	sub, _, err := h.c.subscribe(batch.rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	// What a worker reports of a process it killed that SIGTERM ended.
	_, err = run(h, func(r reply[wire.None]) {
		h.c.executorStateChanged("w1", wire.ExecutorStateChanged{AppID: batch.rec.ID, ExecutorID: e.id, State: wire.ExecutorKilled,
			ExitCode: intp(143), Message: "killed by the master (exited with code 143: terminated by SIGTERM)"}, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = "preempted for queue etl (exited with code 143)"
	var told string
	for _, ev := range drain(sub) {
		if ev.Executor != nil && ev.Executor.ID == e.id && ev.Executor.State == wire.ExecutorKilled {
			told = ev.Executor.Message
		}
	}
	if told != want {
		t.Errorf("its app's stream heard it ended %q, want %q", told, want)
	}
	for _, st := range mustAppStatus(t, h, batch.rec.ID).Executors {
		if st.ID == e.id && (st.State != wire.ExecutorKilled || st.Message != want) {
			t.Errorf("its status: %s %q, want KILLED %q", st.State, st.Message, want)
		}
	}
}
