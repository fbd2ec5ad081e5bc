package placement

import (
	"cmp"
	"slices"
	"sort"
)

// bestFitPieces is the most workers bestfit splits one round's grant over.
// With 2, losing any single worker costs an app about half of what a round
// gave it at most, while the app needs only about twice the fewest
// executors possible (pack needs the fewest but may put a whole app on one
// worker; spread bounds the loss but shreds the app into many executors).
const bestFitPieces = 2

// bestFit splits what an app is granted in a round into at most
// bestFitPieces equal pieces, each at least the minimum core unit (so a
// grant smaller than two units stays whole), and puts each piece on the
// worker with the least free capacity that still holds it whole (best fit).
// Small holes fill first and large holes stay whole for large executors.
// When no worker holds a piece whole, the largest remaining worker takes
// what it has (never less than the unit); cores still unplaced then go to
// the workers already chosen (their executors grow) before new workers are
// used, so the grant is never left short while a chosen worker has room.
// It is a FitPolicy: the Index walks it by its spec (fastpath.go).
type bestFit struct {
	spec FitSpec     // its order's name normalized, its unit CoreUnit'd, bestFitPieces
	cmp  compareFunc // the spec's order, worked out once
}

var _ FitPolicy = (*bestFit)(nil)

func newBestFit(opts Options) (Policy, error) {
	cmp, err := orderLess(opts.Order)
	if err != nil {
		return nil, err
	}
	spec := FitSpec{WorkerOrder: normalOrder(opts.Order), Unit: CoreUnit(opts.MinCoreUnit), Pieces: bestFitPieces}
	return &bestFit{spec: spec, cmp: cmp}, nil
}

func (p *bestFit) Name() string           { return "bestfit" }
func (p *bestFit) MinCoreUnit() int       { return p.spec.Unit }
func (p *bestFit) Fit() FitSpec           { return p.spec }
func (p *bestFit) Order(workers []Worker) { sortWorkers(workers, p.cmp) }

func (p *bestFit) Assign(app App, workers []Worker) []int {
	f := newFit(app, workers, p.spec.Unit)
	assignFit(f, p.spec.Pieces)
	return f.cores()
}

// fitCandidate is a worker with its free capacity in slots: cores when the
// app did not fix its executor size, whole executors when it did.
type fitCandidate struct {
	index, slots int
}

// fitCount is what one app's bestfit assignment still has to place, in
// slots, whichever way it finds its workers (fit over a slice, indexFit
// over the Index).
type fitCount struct {
	unit      int // the policy's CoreUnit
	fixed     bool
	slotCores int
	remaining int // slots still to place
	room      int // executors the app may still start
}

func newFitCount(app App, unit int) fitCount {
	f := fitCount{unit: unit, fixed: app.CoresPerExecutor > 0, slotCores: 1, room: executorRoom(app)}
	if f.fixed {
		f.slotCores = app.CoresPerExecutor
	}
	return f
}

func (f *fitCount) count() *fitCount { return f }

// fitter finds bestfit's workers: fit over a slice, indexFit over the Index.
type fitter interface {
	count() *fitCount
	placeNew(want int) int // on a worker not used yet; how many placed
	topUp()                // on the workers used
}

// assignFit is bestfit's assignment: the grant in at most pieces pieces
// (FitSpec.Pieces), each on the worker that holds it with the least to
// spare, then what is left on the workers used and on new ones.
func assignFit(f fitter, pieces int) {
	c := f.count()
	for _, piece := range c.split(pieces) {
		f.placeNew(piece)
	}
	for c.remaining > 0 {
		f.topUp()
		if c.remaining == 0 || f.placeNew(c.remaining) == 0 {
			break
		}
	}
}

// fit is one app's bestfit assignment in progress.
type fit struct {
	fitCount
	fresh    []fitCandidate // workers not used yet, fewest free slots first
	used     []fitCandidate // workers used, with the slots they have left
	assigned []int          // slots per worker index
}

func newFit(app App, workers []Worker, unit int) *fit {
	f := &fit{fitCount: newFitCount(app, unit)}
	memory := max(app.MemoryPerExecutorMB, 0)
	f.remaining = min(max(app.CoresLeft, 0), sumCoresFree(workers)) / f.slotCores
	f.assigned = make([]int, len(workers))
	fits := resourceFits(app, workers)
	for i, w := range workers {
		n := slotsFree(w, f.slotCores, memory, f.fixed)
		if fits != nil && fits[i] < 1 {
			n = 0 // no executor's resources
		} else if fits != nil && f.fixed {
			n = min(n, fits[i])
		}
		if n > 0 {
			f.fresh = append(f.fresh, fitCandidate{index: i, slots: n})
		}
	}
	// Ties keep the order the workers came in (the policy's order). The
	// index makes the order total, so an unstable sort gives the same
	// result, in linear time when the workers are already sorted by free
	// cores either way.
	slices.SortFunc(f.fresh, func(a, b fitCandidate) int {
		return cmp.Or(cmp.Compare(a.slots, b.slots), cmp.Compare(a.index, b.index))
	})
	return f
}

// split splits the grant into at most pieces near-equal pieces, none
// smaller than the smallest allowed executor, largest first.
func (f *fitCount) split(pieces int) []int {
	n := f.remaining
	if n <= 0 {
		return nil
	}
	k := max(1, min(pieces, n/f.smallest()))
	out := make([]int, k)
	for i := range out {
		out[i] = n / k
		if i < n%k {
			out[i]++
		}
	}
	return out
}

// smallest is the fewest slots a new executor may get: one fixed-size
// executor, or the unit (less when fewer cores remain).
func (f *fitCount) smallest() int {
	if f.fixed {
		return 1 // a slot is one executor of the fixed size
	}
	return ExecutorStep(0, f.unit, f.remaining)
}

// placeNew puts up to want slots on one worker not used yet and returns how
// many it placed.
func (f *fit) placeNew(want int) int {
	if want = f.newWant(want); want <= 0 || len(f.fresh) == 0 {
		return 0
	}
	k := sort.Search(len(f.fresh), func(k int) bool { return f.fresh[k].slots >= want })
	if k == len(f.fresh) {
		k = len(f.fresh) - 1 // nothing holds it whole: the largest takes what it has
		if f.fresh[k].slots < f.smallest() {
			return 0
		}
		want = f.fresh[k].slots
	}
	c := f.fresh[k]
	f.fresh = append(f.fresh[:k], f.fresh[k+1:]...)
	f.assigned[c.index] += want
	f.placedNew(want)
	if c.slots > want {
		f.used = append(f.used, fitCandidate{index: c.index, slots: c.slots - want})
	}
	return want
}

// newWant is what a new executor may take of want slots: no more than
// remain nor, for a fixed size, than the executor limit allows; 0 when the
// app may start no executor.
func (f *fitCount) newWant(want int) int {
	if f.room <= 0 {
		return 0
	}
	want = min(want, f.remaining)
	if f.fixed {
		want = min(want, f.room)
	}
	return want
}

// placedNew counts a new executor of slots: a fixed-size app's executors
// are its slots, any other app has one executor a worker.
func (f *fitCount) placedNew(slots int) {
	f.remaining -= slots
	if f.fixed {
		f.room -= slots
	} else {
		f.room--
	}
}

// topUp grows the executors already placed, most room first, with what is
// still unplaced. An app without a fixed size has one executor per worker,
// so this adds no executor; a fixed-size app adds executors under its limit.
func (f *fit) topUp() {
	slices.SortFunc(f.used, func(a, b fitCandidate) int {
		return cmp.Or(cmp.Compare(b.slots, a.slots), cmp.Compare(a.index, b.index))
	})
	for i := range f.used {
		take := f.topUpTake(f.used[i].slots)
		f.assigned[f.used[i].index] += take
		f.used[i].slots -= take
	}
}

// topUpTake counts what a top-up gives a used worker with left slots.
func (f *fitCount) topUpTake(left int) int {
	take := min(left, f.remaining)
	if f.fixed {
		take = min(take, f.room)
		f.room -= take
	}
	take = max(take, 0)
	f.remaining -= take
	return take
}

// cores converts slots to cores.
func (f *fit) cores() []int {
	for i := range f.assigned {
		f.assigned[i] *= f.slotCores
	}
	return f.assigned
}

// slotsFree is how many slots w can hold for the app: its free cores when the
// app has one executor per worker (and w has memory for it), or the number of
// fixed-size executors its cores and memory both allow.
func slotsFree(w Worker, slotCores, memory int, fixed bool) int {
	if w.CoresFree <= 0 || w.MemoryFreeMB < memory {
		return 0
	}
	n := w.CoresFree / slotCores
	if fixed && memory > 0 {
		n = min(n, w.MemoryFreeMB/memory)
	}
	return n
}
