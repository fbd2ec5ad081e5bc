package share

import (
	"cmp"
	"slices"
)

// Preemption: when a queue is owed capacity (it is below its fair share,
// guarantee included, and its demand has waited past the delay) and none is
// free, the master takes executors back from queues above their fair
// share; within one queue, a waiting app of a higher priority takes them
// from the queue's apps of a lower one.

// Running is an executor that could be taken back.
type Running struct {
	Queue    int // index into Cluster.Queues
	Priority int // its app's
	Worker   int // index into Cluster.Free
	Use      Vec
	// Started orders executors by age: the larger, the more recent (the
	// first taken).
	Started int64
}

// Need is executors of one shape that a queue is owed room for, Count of
// them, for an app of Priority.
type Need struct {
	Queue    int
	Priority int
	Shape    Vec
	Count    int
}

// QueueState is a queue as preemption sees it.
type QueueState struct {
	Usage   Vec
	Fair    Vec  // its fair share (FairShares), guarantee included
	Preempt bool // its executors may be taken back
}

// Cluster is what a preemption decision looks at.
type Cluster struct {
	Capacity Vec
	Queues   []QueueState
	Free     []Vec // per worker
	Running  []Running
}

// Victim is an executor to take back (an index into Cluster.Running) for
// the need (an index into the needs) it makes room for.
type Victim struct {
	Executor int
	Need     int
	// Unit numbers the executors made room for, in order: the victims of
	// one unit free room on one worker for one executor of the need.
	Unit int
}

// Plan picks the executors to take back for needs, in their order: for
// each executor a need is owed room for, the worker where the fewest
// executors free enough room (with what is free there already), taking
// the most recently started first. An executor of another queue is taken
// only if that queue allows it and stays at or above its fair share
// without it, and only while the needing queue is below its own; one of
// the same queue only for a need of a higher priority. A need that fits
// somewhere already takes nothing (the next round places it), and nothing
// is taken unless what it frees fits the need: every executor taken makes
// room that will be used. c is not changed.
func Plan(c Cluster, needs []Need) []Victim {
	usage := make([]Vec, len(c.Queues))
	for i, q := range c.Queues {
		usage[i] = slices.Clone(q.Usage)
	}
	free := make([]Vec, len(c.Free))
	for i, f := range c.Free {
		free[i] = slices.Clone(f)
	}
	onWorker := map[int][]int{} // worker → its running executors, most recent first
	for i, r := range c.Running {
		onWorker[r.Worker] = append(onWorker[r.Worker], i)
	}
	for w := range onWorker {
		slices.SortFunc(onWorker[w], func(a, b int) int { return cmp.Compare(c.Running[b].Started, c.Running[a].Started) })
	}
	workers := make([]int, 0, len(onWorker))
	for w := range onWorker {
		workers = append(workers, w)
	}
	slices.Sort(workers)
	taken := make([]bool, len(c.Running))
	below := func(q int) bool {
		return DominantShare(usage[q], c.Capacity) < DominantShare(c.Queues[q].Fair, c.Capacity)-1e-9
	}
	// eligible reports whether v may be taken for n, besides the picks
	// already made for the same executor (picked, by queue).
	eligible := func(n Need, v int, picked map[int]Vec) bool {
		r := c.Running[v]
		if taken[v] || !c.Queues[r.Queue].Preempt {
			return false
		}
		if r.Queue == n.Queue {
			return r.Priority < n.Priority
		}
		after := usage[r.Queue].Sub(r.Use)
		if p, ok := picked[r.Queue]; ok {
			after = after.Sub(p)
		}
		return below(n.Queue) && DominantShare(after, c.Capacity) >= DominantShare(c.Queues[r.Queue].Fair, c.Capacity)-1e-9
	}
	var out []Victim
	unit := 0
	for ni, n := range needs {
	units:
		for range n.Count {
			if slices.ContainsFunc(free, n.Shape.Fits) {
				break // room exists: placement's business, not preemption's
			}
			best, bestW := []int(nil), -1
			for _, w := range workers {
				room := slices.Clone(free[w])
				var pick []int
				picked := map[int]Vec{}
				for _, v := range onWorker[w] {
					if n.Shape.Fits(room) || best != nil && len(pick) >= len(best) {
						break
					}
					if eligible(n, v, picked) {
						r := c.Running[v]
						pick = append(pick, v)
						room = room.Add(r.Use)
						if p, ok := picked[r.Queue]; ok {
							picked[r.Queue] = p.Add(r.Use)
						} else {
							picked[r.Queue] = slices.Clone(r.Use)
						}
					}
				}
				if n.Shape.Fits(room) && (best == nil || len(pick) < len(best)) {
					best, bestW = pick, w
				}
			}
			if best == nil {
				break units
			}
			for _, v := range best {
				r := c.Running[v]
				taken[v] = true
				usage[r.Queue] = usage[r.Queue].Sub(r.Use)
				free[bestW] = free[bestW].Add(r.Use)
				out = append(out, Victim{Executor: v, Need: ni, Unit: unit})
			}
			unit++
			free[bestW] = free[bestW].Sub(n.Shape) // held for the need
			usage[n.Queue] = usage[n.Queue].Add(n.Shape)
		}
	}
	return out
}
