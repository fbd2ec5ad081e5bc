package placement

import (
	"cmp"
	"math/bits"
	"slices"
)

// A FitPolicy's fast path in the Index (bestfit's). Its Assign looks for
// "the worker with the fewest free slots that still holds a piece, first
// in the policy's order among equals", a few times per app. The index
// keeps the workers by free cores, then the policy's order (indexOrder),
// so each such question is a binary search and a short walk instead of a
// sort of every usable worker.
//
// A worker's free slots are its free cores (an app without a fixed
// executor size), or its free cores over the executor size. They can also
// be bounded by its memory (memory over the executor's) or by its custom
// resources; then the order by free cores is not the order by free slots,
// and the app goes through StartExecutorsOnWorkers over every worker
// instead. Whether memory can bound anyone is one look at the worker with
// the least free memory per free core (the ratio order).

// indexOrder is the Index's order for a FitPolicy: free cores ascending,
// then the policy's order.
func (p *fitPath) indexOrder(a, b *slot) int {
	return cmp.Or(cmp.Compare(a.w.CoresFree, b.w.CoresFree), p.kind.compareSlots(a, b))
}

// byMemoryPerCore orders workers by free memory per free core, ascending;
// workers without free cores last, ties by ID.
func byMemoryPerCore(x, y *slot) int {
	a, b := &x.w, &y.w
	switch ca, cb := a.CoresFree > 0, b.CoresFree > 0; {
	case ca && !cb:
		return -1
	case cb && !ca:
		return 1
	case ca && cb:
		if c := compareProducts(max(a.MemoryFreeMB, 0), b.CoresFree, max(b.MemoryFreeMB, 0), a.CoresFree); c != 0 {
			return c
		}
	}
	return cmp.Compare(x.rank, y.rank)
}

// compareProducts compares a*b with c*d for non-negative ints, without
// overflow.
func compareProducts(a, b, c, d int) int {
	h1, l1 := bits.Mul64(uint64(a), uint64(b))
	h2, l2 := bits.Mul64(uint64(c), uint64(d))
	return cmp.Or(cmp.Compare(h1, h2), cmp.Compare(l1, l2))
}

// memoryMayBound reports whether some worker's free memory holds fewer
// executors of memory MB than its free cores hold of slotCores cores.
func (x *Index) memoryMayBound(slotCores, memory int) bool {
	if memory <= 0 || x.ratio.n == 0 {
		return false
	}
	w := x.ratio.chunks[0][0].w // the least free memory per free core
	return w.CoresFree > 0 && compareProducts(max(w.MemoryFreeMB, 0), slotCores, w.CoresFree, memory) < 0
}

// indexFit is one app's bestfit assignment over the index: bestFit's fit,
// with its list of fresh workers replaced by searches of the index.
type indexFit struct {
	fitCount
	x      *Index
	cmp    compareFunc // the policy's order
	usable func(Worker) bool
	taken  map[*slot]int // slots given per worker
	used   []indexCandidate
}

type indexCandidate struct {
	s     *slot
	slots int
}

// placeBestFit places one app of a FitPolicy exactly as
// StartExecutorsOnWorkers would over the indexed workers.
func (x *Index) placeBestFit(app App, launches []Launch) []Launch {
	p := x.fit
	if app.CoresLeft <= 0 || executorRoom(app) == 0 {
		return launches
	}
	f := &indexFit{fitCount: newFitCount(app, p.unit), x: x, cmp: p.cmp, taken: map[*slot]int{}}
	memory := max(app.MemoryPerExecutorMB, 0)
	if f.fixed && (asksResources(app) || x.memoryMayBound(f.slotCores, memory)) {
		return x.roundOverAll([]App{app}, launches)
	}
	first := firstStep(app, p.unit)
	f.usable = func(w Worker) bool {
		return w.CoresFree >= first && w.MemoryFreeMB >= memory && ResourceFit(w.Resources, app.ResourcesPerExecutor) >= 1 && app.takes(w)
	}
	// What the app can be given: its cores left, or all the usable workers
	// hold, whichever is less (summed from the largest until it is known).
	sum := 0
	x.order.last(len(x.order.chunks), 0, func(s *slot) bool {
		if s.w.CoresFree < first {
			return true // the rest have fewer free cores still
		}
		if f.usable(s.w) {
			sum = addCores(sum, s.w.CoresFree)
		}
		return sum >= app.CoresLeft
	})
	f.remaining = min(app.CoresLeft, sum) / f.slotCores
	if f.remaining == 0 {
		return launches
	}
	assignFit(f, p.pieces)
	// The grant goes in the policy's order, as over the usable workers.
	chosen := make([]*slot, 0, len(f.taken))
	for s := range f.taken {
		chosen = append(chosen, s)
	}
	slices.SortFunc(chosen, func(a, b *slot) int { return p.cmp(a.w, b.w) })
	g := newGrant(x.policy, app) // the policy's, for its ResourcePicker
	for _, s := range chosen {
		launches = x.grantOn(&g, s, f.taken[s]*f.slotCores, launches)
	}
	return launches
}

// slots is what w holds for the app (memory does not bound it here).
func (f *indexFit) slots(w Worker) int { return w.CoresFree / f.slotCores }

// fresh reports a usable worker the app has not been given yet.
func (f *indexFit) fresh(s *slot) bool {
	_, taken := f.taken[s]
	return !taken && f.usable(s.w)
}

// placeNew is fit.placeNew: the fresh worker with the fewest slots that
// holds want (first in the policy's order among equals), else the one with
// the most (last among equals).
func (f *indexFit) placeNew(want int) int {
	if want = f.newWant(want); want <= 0 {
		return 0
	}
	s := f.fewestHolding(want)
	if s == nil {
		if s = f.most(); s == nil || f.slots(s.w) < f.smallest() {
			return 0
		}
		want = f.slots(s.w)
	}
	f.taken[s] += want
	f.placedNew(want)
	if left := f.slots(s.w) - want; left > 0 {
		f.used = append(f.used, indexCandidate{s, left})
	}
	return want
}

// fewestHolding finds the fresh worker with the fewest slots ≥ want, first
// in the policy's order among those: the first fresh worker of each run of
// equal free cores that make that many slots.
func (f *indexFit) fewestHolding(want int) *slot {
	o := &f.x.order
	c, i := o.search(func(w *Worker) bool { return w.CoresFree >= want*f.slotCores })
	best := o.first(c, i, f.fresh)
	if best == nil {
		return nil
	}
	n := f.slots(best.w)
	last := addCores(n*f.slotCores, f.slotCores-1) // the most free cores with n slots
	for cores := best.w.CoresFree; cores < last; {
		cores++
		c, i := o.search(func(w *Worker) bool { return w.CoresFree >= cores })
		s := o.first(c, i, f.fresh) // the first of its run: runs with none are skipped
		if s == nil || s.w.CoresFree > last {
			break
		}
		if f.cmp(s.w, best.w) < 0 {
			best = s
		}
		cores = s.w.CoresFree
	}
	return best
}

// most finds the fresh worker with the most slots, last in the policy's
// order among those: the last fresh worker of each run of equal free cores
// that make that many slots.
func (f *indexFit) most() *slot {
	o := &f.x.order
	best := o.last(len(o.chunks), 0, f.fresh)
	if best == nil {
		return nil
	}
	least := f.slots(best.w) * f.slotCores // the fewest free cores with as many slots
	for cores := best.w.CoresFree; cores > least; {
		cores--
		c, i := o.search(func(w *Worker) bool { return w.CoresFree > cores })
		s := o.last(c, i, f.fresh) // the last of its run
		if s == nil || s.w.CoresFree < least {
			break
		}
		if f.cmp(s.w, best.w) > 0 {
			best = s
		}
		cores = s.w.CoresFree
	}
	return best
}

// topUp is fit.topUp.
func (f *indexFit) topUp() {
	slices.SortFunc(f.used, func(a, b indexCandidate) int {
		return cmp.Or(cmp.Compare(b.slots, a.slots), f.cmp(a.s.w, b.s.w))
	})
	for i := range f.used {
		take := f.topUpTake(f.used[i].slots)
		if take > 0 {
			f.taken[f.used[i].s] += take
			f.used[i].slots -= take
		}
	}
}
