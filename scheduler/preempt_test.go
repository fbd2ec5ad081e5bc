package scheduler

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/berth-cluster/berth/placement/share"
	"github.com/berth-cluster/berth/wire"
)

// batchHoldsAll is one 8-core worker that batch's app fills with eight
// one-core executors (0 oldest, 7 newest), and etl's app that asks for
// 8: the fair shares are 4 and 4.
func batchHoldsAll(t *testing.T) *cluster {
	cl := newCluster(t)
	cl.worker("w1", 8, 8192)
	cl.queue("batch", 1)
	cl.queue("etl", 1)
	b := cl.app("B", "batch", 0, 0, 100)
	for range 8 {
		cl.run(b, "w1")
	}
	cl.app("E", "etl", 0, 8, 100)
	return cl
}

// A queue owed its fair share starts its clock, says what will be taken
// back and when, and takes nothing before --preemption-delay (QUEUES.md,
// example d).
func TestPreemptionWaitsItsDelay(t *testing.T) {
	cl := batchHoldsAll(t)
	p := cl.schedule()
	etl := p.Queues["etl"]
	if len(p.Preemptions) != 0 || !p.Owing {
		t.Fatalf("at once: %d preemptions, owing %v; want none yet, owing", len(p.Preemptions), p.Owing)
	}
	if !etl.StarvedSince.Equal(t0) {
		t.Errorf("etl starved since %v, want %v", etl.StarvedSince, t0)
	}
	if want := "cores 4, memory 400 MB from queue batch to be reclaimed in 30s"; etl.Reclaiming != want {
		t.Errorf("etl reclaiming %q, want %q", etl.Reclaiming, want)
	}
	// 5 s later (the master kept the clock), 25 s are left.
	cl.queues["etl"].StarvedSince, cl.now = t0, t0.Add(5*time.Second)
	if got := cl.schedule().Queues["etl"].Reclaiming; got != "cores 4, memory 400 MB from queue batch to be reclaimed in 25s" {
		t.Errorf("after 5s: %q", got)
	}
}

// Once the delay has passed, the four most recent of batch's executors
// are taken back for etl, and no more (batch keeps its fair share).
func TestPreemptionTakesTheMostRecentDownToTheFairShare(t *testing.T) {
	cl := batchHoldsAll(t)
	cl.queues["etl"].StarvedSince, cl.now = t0, t0.Add(30*time.Second)
	p := cl.schedule()
	var ids []int
	for _, pr := range p.Preemptions {
		if pr.AppID != "B" || pr.Why != "for queue etl" || pr.For != "etl" {
			t.Errorf("preemption %+v, want batch's executors for queue etl", pr)
		}
		ids = append(ids, pr.ExecutorID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int{4, 5, 6, 7}) {
		t.Errorf("preempted %v, want batch's four most recent [4 5 6 7]", ids)
	}
	if got := p.Queues["etl"].Reclaiming; got != "reclaiming cores 4, memory 400 MB from queue batch" {
		t.Errorf("etl reclaiming %q", got)
	}
	// While they end, nothing more is taken for etl.
	cl.queues["etl"].Reclaiming = 4
	if p := cl.schedule(); len(p.Preemptions) != 0 {
		t.Errorf("%d more preemptions while four are ending", len(p.Preemptions))
	}
}

// Nothing is taken from a queue that refuses preemption, nor for a need
// no worker could hold even empty.
func TestPreemptionRefused(t *testing.T) {
	cl := batchHoldsAll(t)
	cl.queues["batch"].Preempt = false
	cl.queues["etl"].StarvedSince, cl.now = t0, t0.Add(time.Minute)
	if p := cl.schedule(); len(p.Preemptions) != 0 {
		t.Errorf("%d preemptions from a queue that refuses them", len(p.Preemptions))
	}
	cl = batchHoldsAll(t)
	cl.apps[1].MemoryMB = 1 << 20 // no worker holds one
	cl.queues["etl"].StarvedSince, cl.now = t0, t0.Add(time.Minute)
	if p := cl.schedule(); len(p.Preemptions) != 0 {
		t.Errorf("%d preemptions for an executor no worker holds", len(p.Preemptions))
	}
}

// Within a queue, an app of a higher priority that waited the delay takes
// executors of its queue's lower priorities, whatever the fair shares.
func TestPreemptionForAHigherPriority(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 4, 4096)
	low := cl.app("L", wire.DefaultQueue, 0, 0, 100)
	for range 4 {
		cl.run(low, "w1")
	}
	high := cl.app("H", wire.DefaultQueue, 5, 1, 100)
	p := cl.schedule()
	if got := p.Apps["H"].WaitingSince; !got.Equal(t0) || len(p.Preemptions) != 0 {
		t.Fatalf("at once: waiting since %v, %d preemptions", got, len(p.Preemptions))
	}
	high.WaitingSince, cl.now = t0, t0.Add(30*time.Second)
	p = cl.schedule()
	if len(p.Preemptions) != 1 || p.Preemptions[0].AppID != "L" || p.Preemptions[0].Why != "for an app of priority 5 in queue default" {
		t.Errorf("preemptions %+v, want one of L's for priority 5", p.Preemptions)
	}
}

// viewOf is the preemption view after a round of cl's, for needs (whose
// Queue fields index the queues by name, sorted): each executor in it as
// "app/executor-id".
func viewOf(t *testing.T, cl *cluster, needs []share.Need) []string {
	t.Helper()
	r := newRound(cl.view())
	rnd := r.newShareRound()
	r.placeExecutors(rnd)
	rnd.fairShares()
	var queues []*queueRound
	for _, name := range slices.Sorted(maps.Keys(rnd.queues)) {
		queues = append(queues, rnd.queues[name])
	}
	view, victims := r.preemptionView(rnd, queues, needs)
	if len(view.Running) != len(victims) {
		t.Fatalf("the view lists %d executors and maps back %d", len(view.Running), len(victims))
	}
	var got []string
	for i, e := range victims {
		if view.Free[view.Running[i].Worker] == nil {
			t.Errorf("view entry %d is on no worker", i)
		}
		got = append(got, e.app.ID+"/"+strconv.Itoa(e.id))
	}
	slices.Sort(got)
	return got
}

// Of a queue above its fair share, the view offers only its most recent
// executors that it holds above that share, across its apps; of a queue
// below it, or refusing preemption, none; for a need within a queue,
// every executor of its apps of a lower priority.
func TestPreemptionViewOffersOnlyWhatMayBeTaken(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 8, 8192)
	cl.queue("batch", 1)
	cl.queue("etl", 1)
	cl.queue("keep", 1).Preempt = false
	a := cl.app("A", "batch", 0, 3, 100)
	b := cl.app("B", "batch", 0, 3, 100)
	k := cl.app("K", "keep", 0, 2, 100)
	for _, x := range []*testApp{a, a, a, b, b, b, k, k} { // A's the oldest, then B's
		cl.run(x, "w1")
	}
	cl.app("E", "etl", 0, 0, 100)
	// batch's fair share is read back, not assumed: this test is about
	// which executors the view offers, FairShares' tests about the share.
	r := newRound(cl.view())
	rnd := r.newShareRound()
	r.placeExecutors(rnd)
	rnd.fairShares()
	fair := int(rnd.queues["batch"].fair[0])
	above := 6 - fair
	if above <= 0 || above >= 6 {
		t.Fatalf("batch's fair share is %d of its 6 cores: the test needs some above it, not all", fair)
	}
	got := viewOf(t, cl, []share.Need{{Queue: 2, Shape: share.Vec{1, 100}, Count: 1}})
	var want []string
	for i := range above { // B's executors first (most recent), then A's
		if i < 3 {
			want = append(want, "B/"+strconv.Itoa(2-i))
		} else {
			want = append(want, "A/"+strconv.Itoa(5-i))
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("batch holds 6 with a fair share of %d: the view offers %v, want its %d most recent %v", fair, got, above, want)
	}
	// A need of priority 1 in batch may take every executor of priority 0
	// there, whatever the fair share.
	got = viewOf(t, cl, []share.Need{{Queue: 0, Priority: 1, Shape: share.Vec{1, 100}, Count: 1}})
	if want := []string{"A/0", "A/1", "A/2", "B/0", "B/1", "B/2"}; !slices.Equal(got, want) {
		t.Errorf("for a priority-1 need in batch the view offers %v, want all of batch's %v", got, want)
	}
}
