package master

import (
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// An executor whose end was being written (its worker reported it
// EXITED) was still offered to the preemption round as RUNNING: the
// preemption's write of its record, committed after the end's delete,
// brought the record back, for a new leader to adopt a ghost and count it
// as given back to the queue it was taken for.
func TestAnExecutorWhoseEndIsInFlightIsNotPreempted(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.PreemptionDelay = time.Second })
	h.addWorker("w1", 4, 8192)
	for _, q := range []string{"a", "b"} {
		if _, err := h.setQueue(q, wire.QueueSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	a := h.addApp(oneCoreApp("a", 0))
	h.running(a)
	if len(a.executors) != 4 {
		t.Fatalf("app a holds %d executors, want the worker's 4", len(a.executors))
	}
	h.addApp(oneCoreApp("b", 0)) // owed half the cluster
	h.pass(500*time.Millisecond, "w1")
	// Every executor of a exits; the ends are written, not yet durable.
	for _, e := range sortedExecutors(a.executors) {
		h.c.executorStateChanged("w1", wire.ExecutorStateChanged{AppID: a.rec.ID, ExecutorID: e.id, State: wire.ExecutorExited, ExitCode: intp(0)},
			(&answer[wire.None]{}).reply())
	}
	// The preemption delay passes with the ends still in flight.
	h.clock.advance(600 * time.Millisecond)
	if _, err := h.c.heartbeat("w1", wire.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
	h.c.tick()
	h.c.runSchedule()
	h.commit()
	for key, rec := range h.fx.state.Executors {
		if rec.AppID == a.rec.ID {
			t.Errorf("executor %s of app a is durable again after its end (preempted for %q)", key, rec.PreemptedFor)
		}
	}
	if n := h.c.round.reclaiming["b"]; n != 0 {
		t.Errorf("queue b waits for %d executors taken back, which had ended", n)
	}
}
