package placement

import (
	"math"
	"slices"
)

// Index is a cluster's workers kept in a policy's order and updated
// incrementally, for a master that schedules round after round: a launch
// moves the few workers it changed, and a round finds each app's usable
// workers by walking the order from where they start, stopping as soon as
// the app is served. The policy picks the walk by the interfaces it
// implements (fastpath.go), never by which policy it is: a StepPolicy's
// round (spread and pack, any unit, any order) costs O(steps + log W) per
// app (in the orders by free cores, O(steps + W/4096) with the buckets of
// buckets.go, plus one layout of every worker, O(W), after a worker joined
// with an ID between two others'), and allocates in proportion to the
// workers an app gets, not to W; a FitPolicy (bestfit) has its own walk
// (index_bestfit.go); an IncrementalPolicy (gpushare's fgd and frag-fit)
// decides through its own Placer, which the index keeps up to date
// (incremental.go). An app the placer declines, and every app of other
// policies, is decided through StartExecutorsOnWorkers over the indexed
// workers (O(W) per round). The decisions are the same either way.
//
// An Index is not safe for concurrent use.
type Index struct {
	policy Policy
	// step is a StepPolicy's fast path (index_steps.go), if step.on. A
	// value, not a pointer: StartExecutorsOnWorkers builds an index of a
	// StepPolicy every round, and it costs no allocation of its own.
	step   stepPath
	fit    *fitPath // a FitPolicy's fast path (index_bestfit.go); nil otherwise
	placer Placer   // an IncrementalPolicy's placer; nil otherwise
	order  ordered
	// byCores replaces order for a StepPolicy in the orders by free cores
	// or by ID (buckets.go); nil otherwise.
	byCores *buckets
	ratio   ordered // a FitPolicy only: the workers by free memory per free core
	ids     ordered // every worker by ID: where ranks come from (ranks.go)
	byID    map[string]*slot
	cores   int // free cores of all indexed workers (saturating)
	cand    []*slot
	// Reused by every app of a round (placeApp): the candidates' copies
	// and the steps' counters. A round of 1,000 large apps allocated them
	// anew per app, and the collector's work was a third of the round.
	ws    []Worker
	steps steps
	// cp is the open checkpoint, if any (checkpoint.go).
	cp checkpoint
}

// NewIndex returns an empty index for policy p. Its fast path is the first
// of StepPolicy, FitPolicy and IncrementalPolicy that p implements (with a
// spec the index can walk, fastpath.go); the spec is read here, once.
func NewIndex(p Policy) *Index {
	x := &Index{policy: p, byID: map[string]*slot{}}
	// By ID for a policy outside the fast paths: its round sorts the
	// workers again anyway. (An IncrementalPolicy's Placer expects it.)
	x.order.cmp = byRank
	x.ids.cmp = byIDString
	if sp, ok := stepPathOf(p); ok {
		x.step = sp
		x.order.cmp = sp.kind.compareSlots
		if sp.kind == byCoresDesc || sp.kind == byCoresAsc || sp.kind == byID {
			x.byCores = &buckets{desc: sp.kind == byCoresDesc, flat: sp.kind == byID, ids: &x.ids}
		}
	} else if fp, ok := fitPathOf(p); ok {
		x.fit = &fp
		x.order.cmp = fp.indexOrder
		x.ratio.cmp = byMemoryPerCore
	} else if ip, ok := p.(IncrementalPolicy); ok {
		x.placer = ip.NewPlacer()
	}
	return x
}

// buildIndex indexes workers (the first of a repeated ID) for one round.
func buildIndex(p Policy, workers []Worker) *Index {
	x := NewIndex(p)
	slots := make([]*slot, 0, len(workers))
	store := make([]slot, len(workers)) // one allocation for all the slots
	for i, w := range workers {
		if _, dup := x.byID[w.ID]; dup {
			continue
		}
		s := &store[i]
		s.w = cloneWorker(w)
		x.byID[w.ID] = s
		x.cores = addCores(x.cores, w.CoresFree)
		slots = append(slots, s)
		if x.placer != nil {
			x.placer.Put(s.w)
		}
	}
	slices.SortFunc(slots, byIDString)
	for i, s := range slots {
		s.rank = uint64(i+1) * rankGap
	}
	x.ids.build(slots)
	if x.byCores != nil {
		x.byCores.stale = true // laid out by the first walk
		return x
	}
	slices.SortFunc(slots, x.order.cmp)
	x.order.build(slots)
	if x.fit != nil {
		slices.SortFunc(slots, x.ratio.cmp)
		x.ratio.build(slots)
	}
	return x
}

// Put adds a worker or replaces the one with its ID. The index keeps its
// own copy (of the resources too).
func (x *Index) Put(w Worker) {
	s, ok := x.byID[w.ID]
	if ok {
		x.detach(s) // it keeps its rank
		s.w = cloneWorker(w)
	} else {
		s = &slot{w: cloneWorker(w)}
		x.cp.added(s)
		x.byID[w.ID] = s
		x.rankNew(s)
	}
	x.attach(s)
	if x.placer != nil {
		x.placer.Put(s.w)
	}
}

// Delete removes the worker with the ID, if indexed.
func (x *Index) Delete(id string) {
	s, ok := x.byID[id]
	if !ok {
		return
	}
	x.detach(s)
	if x.byCores != nil {
		x.byCores.leave(s)
	}
	x.ids.remove(s)
	delete(x.byID, id)
	if x.placer != nil {
		x.placer.Delete(id)
	}
}

// detach takes s out of the orders, so that its worker may change; attach
// puts it back in where it now belongs.
func (x *Index) detach(s *slot) {
	x.cp.save(s)
	if x.byCores != nil {
		x.byCores.remove(s)
	} else {
		x.order.remove(s)
	}
	if x.fit != nil {
		x.ratio.remove(s)
	}
	x.cores = subCores(x.cores, s.w.CoresFree)
}

func (x *Index) attach(s *slot) {
	if x.byCores == nil {
		x.order.insert(s)
	} else if x.byCores.insert(s); x.byCores.overflow {
		x.toOrdered() // s with every other
	}
	if x.fit != nil {
		x.ratio.insert(s)
	}
	x.cores = addCores(x.cores, s.w.CoresFree)
}

// settle readies the store for a walk: the buckets lay out the workers
// that joined, and give the workers to the sorted store if they count too
// many kinds of free cores.
func (x *Index) settle() {
	if x.byCores == nil {
		return
	}
	if x.byCores.settle(); x.byCores.overflow {
		x.toOrdered()
	}
}

// toOrdered moves every worker from the buckets to the sorted store, for
// good (buckets.go: overflow).
func (x *Index) toOrdered() {
	slots := make([]*slot, 0, x.ids.n)
	x.ids.walk(0, 0, func(s *slot) bool {
		slots = append(slots, s)
		return true
	})
	slices.SortFunc(slots, x.order.cmp)
	x.order.build(slots)
	x.byCores = nil
}

// Len is the number of workers indexed.
func (x *Index) Len() int { return x.ids.n }

// CoresFree is the free cores of all indexed workers (saturating at
// Unlimited).
func (x *Index) CoresFree() int { return x.cores }

// Worker returns the indexed worker with the ID, as the index now sees it.
func (x *Index) Worker(id string) (Worker, bool) {
	s, ok := x.byID[id]
	if !ok {
		return Worker{}, false
	}
	return cloneWorker(s.w), true
}

// Workers lists the indexed workers in the index's order (copies).
func (x *Index) Workers() []Worker {
	x.settle()
	out := make([]Worker, 0, x.Len())
	each := func(s *slot) bool {
		out = append(out, cloneWorker(s.w))
		return true
	}
	if x.byCores != nil {
		x.byCores.walk(math.MinInt, math.MinInt, each)
	} else {
		x.order.walk(0, 0, each)
	}
	return out
}

// Round runs one scheduling round over the indexed workers, exactly as
// StartExecutorsOnWorkers would over them, and takes what it launches off
// the index (a launch that does not happen must be given back with Put).
func (x *Index) Round(apps []App) []Launch {
	x.settle()
	if x.placer != nil {
		return x.roundPlacer(apps)
	}
	if !x.step.on && x.fit == nil {
		return x.roundOverAll(apps, nil)
	}
	launches := make([]Launch, 0, x.launchesAtMost(apps))
	for _, app := range apps {
		if x.step.on {
			launches = x.placeApp(app, launches)
		} else {
			launches = x.placeBestFit(app, launches)
		}
	}
	return launches
}

// launchesAtMost bounds the launches a round of apps can make (each app's
// executor room and cores, all of them the free cores), so that the
// launches are allocated once: grown by appending, they were most of a
// large round's garbage.
func (x *Index) launchesAtMost(apps []App) int {
	unit := 1
	if x.step.on {
		unit = x.step.unit
	}
	n := 0
	for _, app := range apps {
		// ExecutorStep is the largest step: CoresLeft holds at most
		// ceilDiv of it (0 when nothing is left).
		steps := ceilDiv(app.CoresLeft, ExecutorStep(app.CoresPerExecutor, unit, app.CoresLeft))
		n = addCores(n, min(executorRoom(app), steps))
	}
	return min(n, x.cores/unit, 1<<20)
}

// roundOverAll runs a round through StartExecutorsOnWorkers over every
// indexed worker (O(W)) and takes its launches off the index.
func (x *Index) roundOverAll(apps []App, launches []Launch) []Launch {
	got := StartExecutorsOnWorkers(apps, x.Workers(), x.policy)
	for _, l := range got {
		x.take(l, apps)
	}
	return append(launches, got...)
}

// take removes a launch from its worker (the slow path).
func (x *Index) take(l Launch, apps []App) {
	s, ok := x.byID[l.WorkerID]
	if !ok {
		return
	}
	x.detach(s)
	s.w.CoresFree -= l.Cores
	s.w.MemoryFreeMB -= l.MemoryMB
	for _, a := range apps {
		if a.ID != l.AppID {
			continue
		}
		for name, addrs := range l.Resources {
			for _, i := range addrs {
				s.w.Resources[name][i] -= min(a.ResourcesPerExecutor[name], Whole)
			}
		}
		if tag := Tag(a); tag != "" {
			if s.w.Tags == nil {
				s.w.Tags = map[string]int{}
			}
			s.w.Tags[tag]++
		}
		break
	}
	x.attach(s)
}

// grantOn gives the worker in s the executors c cores make for g's app
// (grantState.on) and moves it in the orders.
func (x *Index) grantOn(g *grantState, s *slot, c int, launches []Launch) []Launch {
	if c <= 0 {
		return launches
	}
	x.detach(s)
	before := len(launches)
	launches = g.on(launches, &s.w, c)
	if tag := g.tag; tag != "" && len(launches) > before {
		tags := make(map[string]int, len(s.w.Tags)+1)
		for k, v := range s.w.Tags {
			tags[k] = v
		}
		tags[tag] += len(launches) - before
		s.w.Tags = tags
	}
	x.attach(s)
	return launches
}

// cloneWorker copies w with its own resource lists and tags.
func cloneWorker(w Worker) Worker {
	w.Resources = cloneResources(w.Resources)
	if w.Tags != nil {
		tags := make(map[string]int, len(w.Tags))
		for k, v := range w.Tags {
			tags[k] = v
		}
		w.Tags = tags
	}
	return w
}

func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// addCores adds free cores, ignoring negative ones and saturating at
// Unlimited (as sumCoresFree does).
func addCores(sum, c int) int {
	if c <= 0 {
		return sum
	}
	if sum > Unlimited-c {
		return Unlimited
	}
	return sum + c
}

// subCores undoes addCores (a saturated sum stays saturated).
func subCores(sum, c int) int {
	if c <= 0 || sum == Unlimited {
		return sum
	}
	return sum - c
}
