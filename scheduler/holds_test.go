package scheduler

import (
	"testing"
	"time"
)

// A preemption holds its worker for the queue it was taken for.
func TestPreemptionHoldsItsWorker(t *testing.T) {
	cl := batchHoldsAll(t)
	cl.cfg.PreemptionGrace = 3 * time.Second
	cl.queues["etl"].StarvedSince, cl.now = t0, t0.Add(30*time.Second)
	p := cl.schedule()
	if len(p.Preemptions) == 0 || p.Holds["w1"] != (RoomHold{Queue: "etl", Since: cl.now}) || !p.Owing {
		t.Fatalf("%d preemptions, holds %v, owing %v: want w1 held for etl since now", len(p.Preemptions), p.Holds, p.Owing)
	}
}

// While w1 is held for etl, batch's app (wanting more) gets none of its
// free room and says why; etl's does; once etl is owed nothing, the hold
// goes, and batch may have what is left.
func TestHeldRoomGoesToItsQueueOnly(t *testing.T) {
	cl := newCluster(t)
	cl.cfg.PreemptionGrace = 3 * time.Second
	cl.worker("w1", 4, 4096)
	cl.queue("batch", 1)
	cl.queue("etl", 1)
	b := cl.app("B", "batch", 0, 0, 100)
	cl.run(b, "w1")
	cl.run(b, "w1")
	held := map[string]RoomHold{"w1": {Queue: "etl", Since: t0}}
	cl.now = t0.Add(time.Second)
	v := cl.view()
	v.Holds = held
	p := Schedule(v)
	if n := launched(p)["B"]; n != 0 {
		t.Fatalf("batch's app got %d executors on room held for etl", n)
	}
	// etl wants nothing: the hold goes with this round, and batch's app is
	// not told it waits for it (the next round gives it the room).
	if p.Holds["w1"].Queue != "" || p.Queues["batch"].Held != "" {
		t.Errorf("holds %v, batch held %q: etl wants nothing, the hold must go, and with it the reason", p.Holds, p.Queues["batch"].Held)
	}
	// etl owed an executor the room cannot hold yet (a victim still
	// ending): the hold stays, and batch's app is told why it waits.
	big := cl.app("BIG", "etl", 0, 4, 100)
	big.Cores = 4
	cl.queues["etl"].Reclaiming = 1
	v = cl.view()
	v.Holds = held
	p = Schedule(v)
	if want := "the room freed on worker w1 is held for queue etl, for which executors were taken back there"; launched(p)["B"] != 0 || p.Holds["w1"].Queue != "etl" || p.Queues["batch"].Held != want {
		t.Errorf("launched %v, holds %v, batch held %q; want none of batch's, w1 still held for etl, and %q", launched(p), p.Holds, p.Queues["batch"].Held, want)
	}
	cl.apps, cl.queues["etl"].Reclaiming = cl.apps[:1], 0
	cl.app("E", "etl", 0, 2, 100)
	v = cl.view()
	v.Holds = held
	p = Schedule(v)
	if got := launched(p); got["E"] != 2 || got["B"] != 0 {
		t.Errorf("launched %v: want etl's 2 on its held room, none of batch's", got)
	}
	if p.Holds["w1"].Queue != "" {
		t.Errorf("holds %v: etl placed all it wants, the hold must go", p.Holds)
	}
	// A hold past the grace and its slack frees the room for everyone.
	cl.apps = cl.apps[:1]
	cl.now = t0.Add(cl.cfg.PreemptionGrace + holdSlack)
	v = cl.view()
	v.Holds = held
	if got := launched(Schedule(v)); got["B"] != 2 {
		t.Errorf("launched %v after the hold lapsed: want batch's 2", got)
	}
}
