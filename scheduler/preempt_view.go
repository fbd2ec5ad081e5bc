package scheduler

import (
	"container/heap"
	"math"
	"slices"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/share"
)

// The preemption view: what share.Plan decides on. A round that preempts
// at 10,000 workers and 80,000 executors must decide in milliseconds, so
// the view does not list every executor: of a queue, only its most recent
// executors that it holds above its fair share (those it may lose, most
// recent first, without falling below it), found from each app's
// executors in order of age; and, for a need within a queue, every
// executor of its apps of a lower priority.

// Buffers is storage a round may reuse from one round to the next
// (allocating the preemption view's was a third of its cost). A View
// without one allocates afresh; it changes no decision.
type Buffers struct {
	running []share.Running
	victims []victim
	apps    []app
	appByID map[string]*app
}

// victim is an executor in the preemption view.
type victim struct {
	app    *app
	id     int
	worker string // its worker's id
}

// preemptionView is the cluster as share.Plan sees it, queues[i] being
// queue i: each queue's use and fair share, each placeable worker's free
// room after the round's placements, and the executors that may be taken
// for needs (running, not already being taken back, of a queue that
// allows it).
func (r *round) preemptionView(rnd *shareRound, queues []*queueRound, needs []share.Need) (share.Cluster, []victim) {
	v := &viewBuilder{r: r, rnd: rnd, shapes: map[shapeKey]int{}}
	v.cl = share.Cluster{Capacity: rnd.capacity, Queues: make([]share.QueueState, len(queues))}
	below := make([]int, len(queues)) // a need in the queue may take its executors of a priority below this
	index := make(map[*queueRound]int, len(queues))
	for i, qr := range queues {
		v.cl.Queues[i] = share.QueueState{Usage: qr.usage, Fair: qr.fair, Guarantee: rnd.guaranteeOf(qr), Preempt: qr.q.Preempt}
		below[i], index[qr] = math.MinInt, i
	}
	guaranteed := false // a need of a queue below its guarantee: others down to theirs may give
	var owed share.Vec  // the most such a need uses of what is taken (share.GuaranteeUse)
	for _, n := range needs {
		below[n.Queue] = max(below[n.Queue], n.Priority)
		if !n.Guaranteed {
			continue
		}
		guaranteed = true
		q := v.cl.Queues[n.Queue]
		if owed == nil {
			owed = make(share.Vec, len(rnd.capacity))
		}
		for d := range owed {
			owed[d] = max(owed[d], share.GuaranteeUse(n.Shape, n.Count, q.Guarantee, q.Usage, d))
		}
	}
	v.free()
	appsOf := make([][]*app, len(queues))
	n := 0
	for _, a := range r.apps {
		if qr := rnd.queues[a.Queue]; qr != nil {
			appsOf[index[qr]] = append(appsOf[index[qr]], a)
			n += a.held
		}
	}
	buf := r.v.Buffers
	if buf == nil {
		buf = &Buffers{}
	}
	if cap(buf.running) < n {
		buf.running, buf.victims = make([]share.Running, 0, n), make([]victim, 0, n)
	}
	v.cl.Running, v.victims = buf.running[:0], buf.victims[:0]
	for qi, qr := range queues {
		if !qr.q.Preempt {
			continue // nothing of it may be taken
		}
		var rest []*app
		for _, a := range appsOf[qi] {
			if a.Priority < below[qi] {
				for i := range historyLen(a) {
					v.add(qi, a, a.History.At(i))
				}
			} else {
				rest = append(rest, a)
			}
		}
		v.aboveFair(qi, qr, rest, guaranteed, owed)
	}
	return v.cl, v.victims
}

type shapeKey struct {
	a     *app
	cores int
}

// viewBuilder gathers one preemption view.
type viewBuilder struct {
	r       *round
	rnd     *shareRound
	cl      share.Cluster
	victims []victim
	shapes  map[shapeKey]int // alike executors share one of cl.Shapes
	inView  []int32          // by worker slot: its index in cl.Free, -1 if not placeable
	ids     []string         // by index in cl.Free: the worker's id
}

// free sets each placeable worker's free room, as the round leaves it.
func (v *viewBuilder) free() {
	v.inView = make([]int32, v.r.v.Fleet.Slots())
	for i := range v.inView {
		v.inView[i] = -1
	}
	// What the round's launches take of each worker (the drivers' is in
	// the round's workerUse).
	type room struct{ cores, memory int }
	launched := map[string]room{}
	for _, l := range v.r.plan.Launches {
		x := launched[l.WorkerID]
		launched[l.WorkerID] = room{x.cores + l.Cores, x.memory + l.MemoryMB}
	}
	d := len(v.rnd.dims)
	flat := make([]float64, 0, v.r.v.Index.Len()*d) // one allocation, not 10,000: the index holds the placeable workers
	for w := range v.r.v.Fleet.Workers() {
		if !w.Placeable() {
			continue
		}
		v.inView[w.Slot] = int32(len(flat) / d)
		v.ids = append(v.ids, w.ID)
		cores, memory, res := w.CoresFree, w.MemoryFreeMB, map[string][]int(nil)
		if u, ok := v.r.used[w.ID]; ok {
			cores, memory = u.coresFree(), u.memoryFree()
			res = v.r.resourcesFree(u)
		} else if w.Resources {
			res = v.r.v.Fleet.ResourcesFree(w.ID)
		}
		if l, ok := launched[w.ID]; ok {
			cores, memory = cores-l.cores, memory-l.memory
		}
		flat = append(flat, make([]float64, d)...)
		free := flat[len(flat)-d:]
		free[0], free[1] = float64(cores), float64(memory)
		for r, units := range res {
			if j := slices.Index(v.rnd.dims, r); j >= 2 {
				free[j] = float64(placement.Whole * countWhole(units))
			}
		}
	}
	v.cl.Free = make([]share.Vec, len(flat)/d)
	for i := range v.cl.Free {
		v.cl.Free[i] = share.Vec(flat[i*d : (i+1)*d : (i+1)*d])
	}
}

// worker is e's worker's index in the view, -1 if it is not there.
func (v *viewBuilder) worker(e Executor) int {
	if e.WorkerSlot < 0 || e.WorkerSlot >= len(v.inView) {
		return -1
	}
	return int(v.inView[e.WorkerSlot])
}

// takeable reports whether e may be taken at all: running on a placeable
// worker, not already being taken back.
func (v *viewBuilder) takeable(e Executor) bool { return e.Takeable && v.worker(e) >= 0 }

// use is the shape e of a holds, as an index into cl.Shapes.
func (v *viewBuilder) use(a *app, e Executor) int {
	k := shapeKey{a, e.Cores}
	si, ok := v.shapes[k]
	if !ok {
		si = len(v.cl.Shapes)
		v.cl.Shapes = append(v.cl.Shapes, v.rnd.vec(e.Cores, e.MemoryMB, a.Resources, 1))
		v.shapes[k] = si
	}
	return si
}

// add puts e of a in the view if it may be taken.
func (v *viewBuilder) add(qi int, a *app, e Executor) {
	if !v.takeable(e) {
		return
	}
	v.cl.Running = append(v.cl.Running, share.Running{Queue: qi, Priority: a.Priority,
		Worker: v.worker(e), Shape: v.use(a, e), Started: int64(e.Seq)})
	v.victims = append(v.victims, victim{a, e.ID, v.ids[v.worker(e)]})
}

// aboveFair adds queue qi's most recent executors among apps, as long as
// the queue, without them, stays at or above its fair share, or, for a
// need of a queue below its guarantee (guaranteed), its own guarantee,
// counting of them only what such a need uses (owed; the rest is free
// again for qi): share.Plan's rule, which then picks among them.
func (v *viewBuilder) aboveFair(qi int, qr *queueRound, apps []*app, guaranteed bool, owed share.Vec) {
	capacity, fair := v.rnd.capacity, share.DominantShare(qr.fair, v.rnd.capacity)
	if guaranteed {
		fair = share.DominantShare(v.rnd.guaranteeOf(qr), capacity)
	}
	// What it holds without those added, and without those being taken
	// back already (they leave whatever happens).
	left := qr.usage.Sub(qr.leaving)
	var added share.Vec // what is added so far, when owed caps what counts
	if guaranteed && owed != nil {
		added = make(share.Vec, len(left))
	}
	h := &recentFirst{}
	for _, a := range apps {
		if n := historyLen(a); n > 0 {
			h.tails = append(h.tails, appTail{a, n - 1, a.History.Seq(n - 1)})
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		t := &h.tails[0]
		a, e := t.a, t.a.History.At(t.i)
		if t.i--; t.i < 0 {
			heap.Pop(h)
		} else {
			t.seq = a.History.Seq(t.i)
			heap.Fix(h, 0)
		}
		if !v.takeable(e) {
			continue
		}
		use := v.cl.Shapes[v.use(a, e)]
		after := 0.0
		for d := range left {
			x := left[d] - use[d]
			if added != nil {
				x = left[d] - min(added[d]+use[d], owed[d])
			}
			if x > 1e-9 && capacity[d] > 0 {
				after = max(after, x/capacity[d])
			}
		}
		if after < fair-1e-9 {
			return // taking it would take the queue below its fair share
		}
		for d := range left {
			if added != nil {
				added[d] += use[d]
			} else {
				left[d] -= use[d]
			}
		}
		v.add(qi, a, e)
	}
}

// appTail is an app's executors (History) not yet looked at, up to i,
// and the age of the one at i.
type appTail struct {
	a   *app
	i   int
	seq uint64
}

// recentFirst is a heap of apps' tails, the most recent executor on top.
type recentFirst struct{ tails []appTail }

func (h recentFirst) Len() int           { return len(h.tails) }
func (h recentFirst) Less(i, j int) bool { return h.tails[i].seq > h.tails[j].seq }
func (h recentFirst) Swap(i, j int)      { h.tails[i], h.tails[j] = h.tails[j], h.tails[i] }
func (h *recentFirst) Push(x any)        { h.tails = append(h.tails, x.(appTail)) }
func (h *recentFirst) Pop() any {
	t := h.tails[len(h.tails)-1]
	h.tails = h.tails[:len(h.tails)-1]
	return t
}

// historyLen is how many executors a's History lists (none without one).
func historyLen(a *app) int {
	if a.History == nil {
		return 0
	}
	return a.History.Len()
}

// countWhole counts the units of a resource wholly free.
func countWhole(units []int) int {
	n := 0
	for _, u := range units {
		if u == placement.Whole {
			n++
		}
	}
	return n
}
