package master

import (
	"container/heap"
	"math"
	"slices"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/share"
	"github.com/berth-cluster/berth/wire"
)

// The preemption view: what share.Plan decides on. A round that preempts
// at 10,000 workers and 80,000 executors must decide in milliseconds, so
// the view does not list every executor: of a queue, only its most recent
// executors that it holds above its fair share (those it may lose, most
// recent first, without falling below it), found from each app's
// executors in order of age; and, for a need within a queue, every
// executor of its apps of a lower priority.

// preemptionView is the cluster as share.Plan sees it, queues[i] being
// queue i: each queue's use and fair share, each schedulable worker's free
// room, and the executors that may be taken for needs (running, not
// already being taken back, of a queue that allows it).
func (c *core) preemptionView(rnd *shareRound, queues []*queueRound, needs []share.Need) (share.Cluster, []*executorInfo) {
	v := &viewBuilder{c: c, rnd: rnd, shapes: map[shapeKey]int{}}
	v.cl = share.Cluster{Capacity: rnd.capacity, Queues: make([]share.QueueState, len(queues))}
	below := make([]int, len(queues)) // a need in the queue may take its executors of a priority below this
	index := make(map[*queueRound]int, len(queues))
	for i, qr := range queues {
		v.cl.Queues[i] = share.QueueState{Usage: qr.usage, Fair: qr.fair, Guarantee: rnd.guaranteeOf(qr), Preempt: qr.q.rec.Preempt}
		below[i], index[qr] = math.MinInt, i
	}
	guaranteed := false // a need of a queue below its guarantee: others down to theirs may give
	for _, n := range needs {
		below[n.Queue] = max(below[n.Queue], n.Priority)
		guaranteed = guaranteed || n.Guaranteed
	}
	v.free()
	appsOf := make([][]*appInfo, len(queues))
	n := 0
	for _, a := range c.appOrder {
		if qr := rnd.queues[queueName(a.rec.Desc.Queue)]; qr != nil {
			appsOf[index[qr]] = append(appsOf[index[qr]], a)
			n += len(a.executors)
		}
	}
	// Kept from round to round: allocating these was a third of the cost.
	if cap(c.viewBuf.running) < n {
		c.viewBuf.running, c.viewBuf.execs = make([]share.Running, 0, n), make([]*executorInfo, 0, n)
	}
	v.cl.Running, v.running = c.viewBuf.running[:0], c.viewBuf.execs[:0]
	for qi, qr := range queues {
		if !qr.q.rec.Preempt {
			continue // nothing of it may be taken
		}
		var rest []*appInfo
		for _, a := range appsOf[qi] {
			if a.rec.Desc.Priority < below[qi] {
				for _, e := range a.bySeq {
					v.add(qi, e)
				}
			} else {
				rest = append(rest, a)
			}
		}
		v.aboveFair(qi, qr, rest, guaranteed)
	}
	return v.cl, v.running
}

type shapeKey struct {
	a     *appInfo
	cores int
}

// viewBuilder gathers one preemption view.
type viewBuilder struct {
	c       *core
	rnd     *shareRound
	cl      share.Cluster
	running []*executorInfo
	shapes  map[shapeKey]int // alike executors share one of cl.Shapes
}

// free sets each ALIVE worker's free room (and its index in the view).
func (v *viewBuilder) free() {
	alive := v.c.aliveWorkers()
	v.c.viewRound++
	d := len(v.rnd.dims)
	flat := make([]float64, len(alive)*d) // one allocation, not 10,000
	v.cl.Free = make([]share.Vec, len(alive))
	for i, w := range alive {
		w.viewRound, w.viewIndex = v.c.viewRound, i
		free := share.Vec(flat[i*d : (i+1)*d : (i+1)*d])
		free[0], free[1] = float64(w.coresFree()), float64(w.memoryFree())
		if len(w.rec.Resources) > 0 {
			for r, units := range w.resourcesFree() {
				if j := slices.Index(v.rnd.dims, r); j >= 2 {
					free[j] = float64(placement.Whole * countWhole(units))
				}
			}
		}
		v.cl.Free[i] = free
	}
}

// takeable reports whether e may be taken at all: live, running on an
// ALIVE worker, not already being taken back.
func (v *viewBuilder) takeable(e *executorInfo) bool {
	return e.app.executors[e.id] == e && e.worker.viewRound == v.c.viewRound && !e.launching &&
		e.preemptedFor == "" && e.state == wire.ExecutorRunning
}

// use is the shape e holds, as an index into cl.Shapes.
func (v *viewBuilder) use(e *executorInfo) int {
	k := shapeKey{e.app, e.cores}
	si, ok := v.shapes[k]
	if !ok {
		si = len(v.cl.Shapes)
		v.cl.Shapes = append(v.cl.Shapes, v.rnd.vec(e.cores, e.memory, milli(e.app.rec.Desc.ResourcesPerExecutor), 1))
		v.shapes[k] = si
	}
	return si
}

// add puts e in the view if it may be taken.
func (v *viewBuilder) add(qi int, e *executorInfo) {
	if !v.takeable(e) {
		return
	}
	v.cl.Running = append(v.cl.Running, share.Running{Queue: qi, Priority: e.app.rec.Desc.Priority,
		Worker: e.worker.viewIndex, Shape: v.use(e), Started: int64(e.seq)})
	v.running = append(v.running, e)
}

// aboveFair adds queue qi's most recent executors among apps, as long as
// the queue, without them, stays at or above its fair share, or, for a
// need of a queue below its guarantee (guaranteed), its own guarantee
// (share.Plan's rule, which then picks among them).
func (v *viewBuilder) aboveFair(qi int, qr *queueRound, apps []*appInfo, guaranteed bool) {
	capacity, fair := v.rnd.capacity, share.DominantShare(qr.fair, v.rnd.capacity)
	if guaranteed {
		fair = share.DominantShare(v.rnd.guaranteeOf(qr), capacity)
	}
	// What it holds without those added, and without those being taken
	// back already (they leave whatever happens).
	left := qr.usage.Sub(qr.leaving)
	h := &recentFirst{}
	for _, a := range apps {
		if len(a.bySeq) > 0 {
			h.tails = append(h.tails, appTail{a, len(a.bySeq) - 1})
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		t := &h.tails[0]
		e := t.a.bySeq[t.i]
		if t.i--; t.i < 0 {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
		if !v.takeable(e) {
			continue
		}
		use := v.cl.Shapes[v.use(e)]
		after := 0.0
		for d := range left {
			if x := left[d] - use[d]; x > 1e-9 && capacity[d] > 0 {
				after = max(after, x/capacity[d])
			}
		}
		if after < fair-1e-9 {
			return // taking it would take the queue below its fair share
		}
		for d := range left {
			left[d] -= use[d]
		}
		v.add(qi, e)
	}
}

// appTail is an app's executors (bySeq) not yet looked at, up to i.
type appTail struct {
	a *appInfo
	i int
}

// recentFirst is a heap of apps' tails, the most recent executor on top.
type recentFirst struct{ tails []appTail }

func (h recentFirst) Len() int { return len(h.tails) }
func (h recentFirst) Less(i, j int) bool {
	return h.tails[i].a.bySeq[h.tails[i].i].seq > h.tails[j].a.bySeq[h.tails[j].i].seq
}
func (h recentFirst) Swap(i, j int) { h.tails[i], h.tails[j] = h.tails[j], h.tails[i] }
func (h *recentFirst) Push(x any)   { h.tails = append(h.tails, x.(appTail)) }
func (h *recentFirst) Pop() any {
	t := h.tails[len(h.tails)-1]
	h.tails = h.tails[:len(h.tails)-1]
	return t
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
