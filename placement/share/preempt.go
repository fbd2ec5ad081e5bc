package share

import (
	"cmp"
	"maps"
	"math"
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
	Shape    int // what it holds: an index into Cluster.Shapes
	// Started orders executors by age: the larger, the more recent (the
	// first taken).
	Started int64
}

// Need is executors of one shape that a queue is owed room for, Count of
// them, for an app of Priority. Guaranteed: the queue is below its
// guarantee, for which the rule that no queue is taken below its fair
// share gives way (Plan).
type Need struct {
	Queue      int
	Priority   int
	Shape      Vec
	Count      int
	Guaranteed bool
}

// QueueState is a queue as preemption sees it.
type QueueState struct {
	Usage     Vec
	Fair      Vec  // its fair share (FairShares), guarantee included
	Guarantee Vec  // what it is guaranteed (in its demand's shape)
	Preempt   bool // its executors may be taken back
}

// Cluster is what a preemption decision looks at.
type Cluster struct {
	Capacity Vec
	Queues   []QueueState
	Free     []Vec // per worker
	Running  []Running
	// Shapes are what the running executors hold, each shape once: alike
	// executors share one, and Running has no pointers for the collector
	// to follow (a view holds tens of thousands).
	Shapes []Vec
}

// Use is what running executor v holds.
func (c Cluster) Use(v int) Vec { return c.Shapes[c.Running[v].Shape] }

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
// the same queue only for a need of a higher priority. For a need of a
// queue below its guarantee, the queue taken from need only stay at or
// above its own guarantee: executors of no fixed size (Spark's, when
// spark.executor.cores is unset) hold whole workers, and none could go
// without taking their queue below its fair share, so a guarantee was
// never reached. A guarantee is a promise, a fair share a target: the
// target gives way (the queue taken from is then owed, and gets back what
// frees first, as any queue below its fair share). A need that fits
// somewhere already takes nothing (the next round places it), and nothing
// is taken unless what it frees fits the need: every executor taken makes
// room that will be used. c is not changed.
func Plan(c Cluster, needs []Need) []Victim {
	p := newPlanner(c)
	var out []Victim
	unit := 0
	for ni, n := range needs {
		roomFree := slices.ContainsFunc(c.Free, n.Shape.Fits)
		for i := range n.Count {
			if roomFree {
				break // room exists: placement's business, not preemption's
			}
			p.left = n.Count - i
			w, pick := p.single(n)
			if pick == nil {
				w, pick = p.several(n)
			}
			if pick == nil {
				break
			}
			for _, v := range pick {
				p.take(v)
				out = append(out, Victim{Executor: v, Need: ni, Unit: unit})
			}
			unit++
			room := p.room(w)
			p.free[w] = room.Sub(n.Shape) // held for the need
			p.usage[n.Queue] = p.usage[n.Queue].Add(n.Shape)
			roomFree = n.Shape.Fits(p.free[w])
		}
	}
	return out
}

// planner is Plan's state: what each queue holds and each worker has
// free as executors are taken (a worker's free room copied when first
// changed), and the executors taken.
type planner struct {
	c         Cluster
	usage     []Vec
	free      map[int]Vec // changed workers' free room
	taken     []bool
	byQueue   []byAge       // each queue's running executors, most recent on top
	onWorker  map[int][]int // worker → its running executors, most recent first (built when first needed)
	fairShare []float64     // each queue's fair dominant share
	guarantee []float64     // each queue's guaranteed dominant share
	left      int           // executors of the need being served still to make room for
}

func newPlanner(c Cluster) *planner {
	p := &planner{c: c, usage: make([]Vec, len(c.Queues)), free: map[int]Vec{}, taken: make([]bool, len(c.Running)),
		byQueue: make([]byAge, len(c.Queues)), fairShare: make([]float64, len(c.Queues)), guarantee: make([]float64, len(c.Queues))}
	for i, q := range c.Queues {
		p.usage[i] = slices.Clone(q.Usage)
		p.fairShare[i] = DominantShare(q.Fair, c.Capacity)
		if q.Guarantee != nil {
			p.guarantee[i] = DominantShare(q.Guarantee, c.Capacity)
		}
		p.byQueue[i].running = c.Running
	}
	count := make([]int, len(c.Queues))
	for _, r := range c.Running {
		count[r.Queue]++
	}
	ids := make([]int, len(c.Running)) // one allocation for every queue's heap
	for q, n := range count {
		p.byQueue[q].ids, ids = ids[:0:n], ids[n:]
	}
	for v, r := range c.Running {
		p.byQueue[r.Queue].ids = append(p.byQueue[r.Queue].ids, v)
	}
	for q := range p.byQueue {
		p.byQueue[q].init() // heaps, not sorts: a round looks at a few of each
	}
	return p
}

func (p *planner) room(w int) Vec {
	if f, ok := p.free[w]; ok {
		return f
	}
	return p.c.Free[w]
}

func (p *planner) take(v int) {
	r, use := p.c.Running[v], p.c.Use(v)
	p.taken[v] = true
	p.usage[r.Queue] = p.usage[r.Queue].Sub(use)
	p.free[r.Worker] = p.room(r.Worker).Add(use)
}

// single is the most recent executor that alone, with what its worker has
// free, makes room for one executor of n: the common case, found without
// a look at every worker. Each queue offers its most recent such executor.
func (p *planner) single(n Need) (int, []int) {
	owed := DominantShare(p.usage[n.Queue], p.c.Capacity) < p.fairShare[n.Queue]-1e-9
	best := -1
	for q := range p.byQueue {
		if q != n.Queue && (!owed || !p.c.Queues[q].Preempt) {
			continue // nothing of it may be taken for n
		}
		if best >= 0 && p.top(q) <= p.c.Running[best].Started {
			continue // none of it is more recent than best
		}
		if v := p.topFit(q, n); v >= 0 && (best < 0 || p.c.Running[v].Started > p.c.Running[best].Started) {
			best = v
		}
	}
	if best < 0 {
		return -1, nil
	}
	return p.c.Running[best].Worker, []int{best}
}

// top is when queue q's most recent executor not taken started, or
// math.MinInt64 if none is left.
func (p *planner) top(q int) int64 {
	h := &p.byQueue[q]
	for h.Len() > 0 && p.taken[h.ids[0]] {
		h.pop()
	}
	if h.Len() == 0 {
		return math.MinInt64
	}
	return p.c.Running[h.ids[0]].Started
}

// topFit is queue q's most recent executor that may be taken for n and
// alone makes room for it, or -1; what it passes over goes back.
func (p *planner) topFit(q int, n Need) int {
	h := &p.byQueue[q]
	var passed []int
	defer func() {
		for _, v := range passed {
			h.push(v)
		}
	}()
	for h.Len() > 0 {
		v := h.ids[0]
		if p.taken[v] {
			h.pop()
			continue
		}
		r := p.c.Running[v]
		if !p.eligible(n, v, nil) {
			if q != n.Queue {
				return -1 // its most recent may not go: it is at its fair share, none may
			}
			passed = append(passed, h.pop()) // a priority too high for n
			continue
		}
		if fitsWith(n.Shape, p.room(r.Worker), p.c.Use(v)) {
			return v
		}
		passed = append(passed, h.pop()) // too small alone
		if len(passed) > maxPassed {
			return -1 // several() finds room of several small ones
		}
	}
	return -1
}

// maxPassed bounds what topFit looks past in one queue.
const maxPassed = 64

// byAge is a heap of executors (indexes into running), the most recently
// started on top. Written out rather than through container/heap: the
// interface calls were half of building 80,000 of them.
type byAge struct {
	running []Running
	ids     []int
}

func (h *byAge) Len() int { return len(h.ids) }

func (h *byAge) less(i, j int) bool { return h.running[h.ids[i]].Started > h.running[h.ids[j]].Started }

func (h *byAge) init() {
	for i := len(h.ids)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *byAge) push(v int) {
	h.ids = append(h.ids, v)
	for i := len(h.ids) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.ids[i], h.ids[parent] = h.ids[parent], h.ids[i]
		i = parent
	}
}

func (h *byAge) pop() int {
	v, last := h.ids[0], len(h.ids)-1
	h.ids[0] = h.ids[last]
	h.ids = h.ids[:last]
	h.down(0)
	return v
}

func (h *byAge) down(i int) {
	for {
		child := 2*i + 1
		if child >= len(h.ids) {
			return
		}
		if r := child + 1; r < len(h.ids) && h.less(r, child) {
			child = r
		}
		if !h.less(child, i) {
			return
		}
		h.ids[i], h.ids[child] = h.ids[child], h.ids[i]
		i = child
	}
}

// fitsWith reports whether shape fits room plus extra, without a copy.
func fitsWith(shape, room, extra Vec) bool {
	for i := range shape {
		if shape[i] > room[i]+extra[i]+1e-9 {
			return false
		}
	}
	return true
}

// several is the worker where the fewest executors (two or more: single
// found none) make room for one executor of n, the most recent first.
func (p *planner) several(n Need) (int, []int) {
	if p.onWorker == nil {
		p.onWorker = map[int][]int{}
		for v, r := range p.c.Running {
			p.onWorker[r.Worker] = append(p.onWorker[r.Worker], v)
		}
		for _, vs := range p.onWorker {
			slices.SortFunc(vs, func(a, b int) int { return cmp.Compare(p.c.Running[b].Started, p.c.Running[a].Started) })
		}
	}
	workers := slices.Sorted(maps.Keys(p.onWorker))
	var best []int
	bestW := -1
	for _, w := range workers {
		room := slices.Clone(p.room(w))
		var pick []int
		picked := map[int]Vec{}
		for _, v := range p.onWorker[w] {
			if n.Shape.Fits(room) || best != nil && len(pick) >= len(best)-1 {
				break
			}
			r := p.c.Running[v]
			if p.eligible(n, v, picked[r.Queue]) {
				use := p.c.Use(v)
				pick = append(pick, v)
				room = room.Add(use)
				if q, ok := picked[r.Queue]; ok {
					picked[r.Queue] = q.Add(use)
				} else {
					picked[r.Queue] = slices.Clone(use)
				}
			}
		}
		if n.Shape.Fits(room) && (best == nil || len(pick) < len(best)) {
			best, bestW = pick, w
			if len(best) == 2 {
				break // no fewer than two: single found none
			}
		}
	}
	return bestW, best
}
