package master

import (
	"slices"
	"strconv"
	"testing"

	"github.com/berth-cluster/berth/placement/share"
	"github.com/berth-cluster/berth/wire"
)

// viewOf is the preemption view of h's cluster after a round, for needs
// (whose Queue fields index the queues by name, sorted); it returns each
// executor in the view as "app-index/executor-id".
func viewOf(t *testing.T, h *harness, needs []share.Need, apps ...*appInfo) []string {
	t.Helper()
	rnd := h.c.newShareRound()
	h.c.scheduleExecutors(rnd)
	rnd.fairShares()
	var queues []*queueRound
	for _, name := range sortedKeys(rnd.queues) {
		queues = append(queues, rnd.queues[name])
	}
	cl, running := h.c.preemptionView(rnd, queues, needs)
	if len(cl.Running) != len(running) {
		t.Fatalf("the view lists %d executors and maps back %d", len(cl.Running), len(running))
	}
	var got []string
	for i, e := range running {
		if cl.Running[i].Started != int64(e.seq) || cl.Free[cl.Running[i].Worker] == nil {
			t.Errorf("view entry %d does not match executor %d", i, e.id)
		}
		got = append(got, string(rune('A'+slices.Index(apps, e.app)))+"/"+strconv.Itoa(e.id))
	}
	slices.Sort(got)
	return got
}

// Of a queue above its fair share, the view offers only its most recent
// executors that it holds above that share, across its apps; of a queue
// below it, or refusing preemption, none; for a need within a queue,
// every executor of its apps of a lower priority.
func TestPreemptionViewOffersOnlyWhatMayBeTaken(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 8, 8192)
	h.setQueue("batch", wire.QueueSpec{})
	h.setQueue("etl", wire.QueueSpec{})
	h.setQueue("keep", wire.QueueSpec{Preempt: boolp(false)})
	old := oneCoreApp("batch", 0)
	old.MaxCores = 3
	a := h.addApp(old) // executors 0..2, the oldest
	recent := oneCoreApp("batch", 0)
	recent.MaxCores = 3
	b := h.addApp(recent) // 0..2, more recent
	kept := oneCoreApp("keep", 0)
	kept.MaxCores = 2
	k := h.addApp(kept)
	for _, x := range []*appInfo{a, b, k} {
		h.running(x)
	}
	h.addAppNoSchedule(oneCoreApp("etl", 0))
	// batch's fair share is read back, not assumed: this test is about
	// which executors the view offers, FairShares' tests about the share.
	rnd := h.c.newShareRound()
	h.c.scheduleExecutors(rnd)
	rnd.fairShares()
	fair := int(rnd.queues["batch"].fair[0])
	above := 6 - fair
	if above <= 0 || above >= 6 {
		t.Fatalf("batch's fair share is %d of its 6 cores: the test needs some above it, not all", fair)
	}
	got := viewOf(t, h, []share.Need{{Queue: 2, Shape: share.Vec{1, 100}, Count: 1}}, a, b, k)
	var want []string
	for i := range above { // b's executors first (most recent), then a's
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
	got = viewOf(t, h, []share.Need{{Queue: 0, Priority: 1, Shape: share.Vec{1, 100}, Count: 1}}, a, b, k)
	if want := []string{"A/0", "A/1", "A/2", "B/0", "B/1", "B/2"}; !slices.Equal(got, want) {
		t.Errorf("for a priority-1 need in batch the view offers %v, want all of batch's %v", got, want)
	}
}
