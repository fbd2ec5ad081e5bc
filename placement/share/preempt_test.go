package share

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A cluster of two workers of 4 cores (memory left out), queue 0 above its
// fair share of 4 with all 8 cores, queue 1 owed 4 and holding none.
func twoQueues() Cluster {
	return Cluster{
		Capacity: Vec{8},
		Queues: []QueueState{
			{Usage: Vec{8}, Fair: Vec{4}, Preempt: true},
			{Usage: Vec{0}, Fair: Vec{4}, Preempt: true},
		},
		Free: []Vec{{0}, {0}},
		Running: []Running{
			{Queue: 0, Worker: 0, Shape: 1, Started: 1},
			{Queue: 0, Worker: 0, Shape: 1, Started: 5},
			{Queue: 0, Worker: 1, Shape: 0, Started: 2},
			{Queue: 0, Worker: 1, Shape: 2, Started: 3},
		},
		Shapes: []Vec{{1}, {2}, {3}},
	}
}

func executors(vs []Victim) []int {
	var out []int
	for _, v := range vs {
		out = append(out, v.Executor)
	}
	slices.Sort(out)
	return out
}

// The fewest executors that free enough on one worker, the most recent
// first; never a queue below its fair share.
func TestPlanTakesTheFewestMostRecentFirst(t *testing.T) {
	c := twoQueues()
	// One executor of 2 cores: worker 0's most recent frees it alone.
	if got := executors(Plan(c, []Need{{Queue: 1, Shape: Vec{2}, Count: 1}})); !slices.Equal(got, []int{1}) {
		t.Errorf("for 2 cores: took %v, want [1]", got)
	}
	// Three cores: worker 1's 3-core executor alone, not two of worker 0.
	if got := executors(Plan(c, []Need{{Queue: 1, Shape: Vec{3}, Count: 1}})); !slices.Equal(got, []int{3}) {
		t.Errorf("for 3 cores: took %v, want [3]", got)
	}
	// Owed 4 cores in 2-core executors: two taken, and no more for a third
	// (queue 0 would fall below its fair share).
	got := executors(Plan(c, []Need{{Queue: 1, Shape: Vec{2}, Count: 3}}))
	if len(got) != 2 {
		t.Errorf("for three 2-core executors: took %v, want two (queue 0 keeps its fair share)", got)
	}
}

func TestPlanLeavesQueuesThatRefuseOrAreNotOwed(t *testing.T) {
	c := twoQueues()
	c.Queues[0].Preempt = false
	if got := Plan(c, []Need{{Queue: 1, Shape: Vec{2}, Count: 1}}); len(got) != 0 {
		t.Errorf("took %v from a queue that refuses preemption", got)
	}
	c = twoQueues()
	c.Queues[1].Usage = Vec{4} // at its fair share: owed nothing
	if got := Plan(c, []Need{{Queue: 1, Shape: Vec{2}, Count: 1}}); len(got) != 0 {
		t.Errorf("took %v for a queue at its fair share", got)
	}
	c = twoQueues()
	c.Free[1] = Vec{2} // room exists
	if got := Plan(c, []Need{{Queue: 1, Shape: Vec{2}, Count: 1}}); len(got) != 0 {
		t.Errorf("took %v while the need fits free room", got)
	}
	c = twoQueues()
	if got := Plan(c, []Need{{Queue: 1, Shape: Vec{5}, Count: 1}}); len(got) != 0 {
		t.Errorf("took %v for a need no worker can ever hold", got)
	}
}

// Within a queue, a higher priority takes from lower ones only.
func TestPlanWithinAQueueByPriority(t *testing.T) {
	c := twoQueues()
	c.Running[1].Priority = 10 // the most recent of all outranks the need
	got := executors(Plan(c, []Need{{Queue: 0, Priority: 5, Shape: Vec{2}, Count: 1}}))
	if !slices.Equal(got, []int{3}) {
		t.Errorf("took %v, want [3]: the priority-10 executor is kept, the next most recent goes", got)
	}
	c.Running[0].Priority, c.Running[2].Priority, c.Running[3].Priority = 10, 10, 10
	if got := Plan(c, []Need{{Queue: 0, Priority: 5, Shape: Vec{2}, Count: 1}}); len(got) != 0 {
		t.Errorf("took %v from higher priorities", got)
	}
}

// On random clusters: only preemptible queues lose executors; a queue that
// loses one to another stays at or above its fair share; what each need
// takes, with what was free, fits it on one worker; no executor is taken
// twice.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for trial := range 500 {
		nq, nw := 2+rng.IntN(4), 1+rng.IntN(6)
		c := Cluster{Capacity: Vec{float64(nw * 8), float64(nw * 32)}, Free: make([]Vec, nw)}
		for w := range c.Free {
			c.Free[w] = Vec{float64(rng.IntN(3)), float64(rng.IntN(8))}
		}
		c.Queues = make([]QueueState, nq)
		for q := range c.Queues {
			c.Queues[q] = QueueState{Usage: Zero(2), Fair: Vec{float64(rng.IntN(nw*8/nq + 1)), float64(rng.IntN(nw*32/nq + 1))}, Preempt: rng.IntN(4) != 0}
		}
		for w := range nw {
			for range 1 + rng.IntN(4) {
				q := rng.IntN(nq)
				use := Vec{float64(1 + rng.IntN(3)), float64(1 + rng.IntN(8))}
				c.Running = append(c.Running, Running{Queue: q, Priority: rng.IntN(3), Worker: w, Shape: len(c.Shapes), Started: rng.Int64N(1000)})
				c.Shapes = append(c.Shapes, use)
				c.Queues[q].Usage = c.Queues[q].Usage.Add(use)
			}
		}
		var needs []Need
		for range 1 + rng.IntN(3) {
			needs = append(needs, Need{Queue: rng.IntN(nq), Priority: rng.IntN(3), Shape: Vec{float64(1 + rng.IntN(4)), float64(1 + rng.IntN(8))}, Count: 1 + rng.IntN(3)})
		}
		victims := Plan(c, needs)
		usage := make([]Vec, nq)
		for q := range usage {
			usage[q] = c.Queues[q].Usage
		}
		seen := map[int]bool{}
		for i, v := range victims {
			r, n := c.Running[v.Executor], needs[v.Need]
			if seen[v.Executor] {
				t.Fatalf("trial %d: executor %d taken twice", trial, v.Executor)
			}
			seen[v.Executor] = true
			if !c.Queues[r.Queue].Preempt {
				t.Fatalf("trial %d: took from queue %d, which refuses preemption", trial, r.Queue)
			}
			if r.Queue == n.Queue && r.Priority >= n.Priority {
				t.Fatalf("trial %d: took priority %d for priority %d in one queue", trial, r.Priority, n.Priority)
			}
			usage[r.Queue] = usage[r.Queue].Sub(c.Use(v.Executor))
			if r.Queue != n.Queue && DominantShare(usage[r.Queue], c.Capacity) < DominantShare(c.Queues[r.Queue].Fair, c.Capacity)-1e-9 {
				t.Fatalf("trial %d: queue %d fell below its fair share: %v < %v", trial, r.Queue, usage[r.Queue], c.Queues[r.Queue].Fair)
			}
			if i == len(victims)-1 || victims[i+1].Unit != v.Unit {
				usage[n.Queue] = usage[n.Queue].Add(n.Shape) // the unit's executor takes its room
			}
		}
	}
}

// Executors that hold whole workers (no fixed size): none can go without
// taking their queue below its fair share, so a queue below its guarantee
// was never served. For it, the taken queue need only keep its own
// guarantee; without a guarantee owed, the fair share holds.
func TestAGuaranteeTakesBelowAnothersFairShare(t *testing.T) {
	c := Cluster{
		Capacity: Vec{8},
		Queues: []QueueState{
			{Usage: Vec{8}, Fair: Vec{5}, Guarantee: Vec{0}, Preempt: true},
			{Usage: Vec{0}, Fair: Vec{3}, Guarantee: Vec{3}, Preempt: true},
		},
		Free:    []Vec{{0}, {0}},
		Running: []Running{{Queue: 0, Worker: 0, Shape: 0, Started: 1}, {Queue: 0, Worker: 1, Shape: 0, Started: 2}},
		Shapes:  []Vec{{4}},
	}
	need := Need{Queue: 1, Shape: Vec{1}, Count: 3}
	if got := Plan(c, []Need{need}); len(got) != 0 {
		t.Errorf("a need above no guarantee took %v: queue 0 would fall below its fair share", got)
	}
	need.Guaranteed = true
	if got := executors(Plan(c, []Need{need})); !slices.Equal(got, []int{1}) {
		t.Errorf("a guaranteed need took %v, want the most recent 4-core executor alone", got)
	}
	c.Queues[0].Guarantee = Vec{8} // queue 0's own guarantee is never taken
	if got := Plan(c, []Need{need}); len(got) != 0 {
		t.Errorf("took %v below queue 0's own guarantee", got)
	}
	// Guaranteed 5 itself: taking a 4-core executor for 3 one-core ones
	// leaves it 4 and a free core to take back, so 5: both guarantees
	// hold. It waited for ever when the whole executor counted.
	c.Queues[0].Guarantee = Vec{5}
	if got := executors(Plan(c, []Need{need})); !slices.Equal(got, []int{1}) {
		t.Errorf("queue 0 guaranteed 5 of its 8: took %v, want one 4-core executor (3 for the need, 1 back to it)", got)
	}
	c.Queues[0].Guarantee = Vec{6} // 8-3 = 5 < 6: its guarantee would not hold
	if got := Plan(c, []Need{need}); len(got) != 0 {
		t.Errorf("queue 0 guaranteed 6 of its 8: took %v, which leaves it 5", got)
	}
}
