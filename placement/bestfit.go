package placement

import "sort"

// bestFitShareDivisor caps one worker's part of what an app is granted in a
// round at 1/bestFitShareDivisor of it (never below one unit or one fixed-size
// executor): with 2, losing any single worker costs an app at most about half
// of what a round gave it.
const bestFitShareDivisor = 2

// bestFit makes as few executors as it can, each as large as the share cap
// allows, and puts each on the worker with the least free capacity that still
// holds it whole (best fit). Small holes are filled first, so large holes
// stay whole for large executors: fewer stranded cores and fewer fragments
// than spread, and a bounded blast radius, unlike pack. When no worker holds
// a whole chunk, the largest remaining worker takes what it has, as long as
// that is at least the minimum core unit.
type bestFit struct {
	unit int
	cmp  compareFunc
}

func newBestFit(opts Options) (Policy, error) {
	cmp, err := orderLess(opts.Order)
	if err != nil {
		return nil, err
	}
	return &bestFit{unit: opts.unit(), cmp: cmp}, nil
}

func (p *bestFit) Name() string           { return "bestfit" }
func (p *bestFit) MinCoreUnit() int       { return p.unit }
func (p *bestFit) Order(workers []Worker) { sortWorkers(workers, p.cmp) }

// fitCandidate is a worker that can take part of the app, with its capacity
// in slots: cores when the app did not fix its executor size, whole executors
// when it did.
type fitCandidate struct {
	index, slots int
}

func (p *bestFit) Assign(app App, workers []Worker) []int {
	assigned := make([]int, len(workers))
	slotCores, memory := 1, max(app.MemoryPerExecutorMB, 0)
	fixed := app.CoresPerExecutor > 0
	if fixed {
		slotCores = app.CoresPerExecutor
	}
	slots := min(max(app.CoresLeft, 0), sumCoresFree(workers)) / slotCores
	room := executorRoom(app)

	candidates := make([]fitCandidate, 0, len(workers))
	for i, w := range workers {
		if n := slotsFree(w, slotCores, memory, fixed); n > 0 {
			candidates = append(candidates, fitCandidate{index: i, slots: n})
		}
	}
	// Fewest free slots first; ties keep the order the workers came in.
	sort.SliceStable(candidates, func(a, b int) bool { return candidates[a].slots < candidates[b].slots })

	shareCap := max(ceilDiv(slots, bestFitShareDivisor), p.smallestChunk(fixed, slots))
	started := 0
	for slots > 0 && started < room && len(candidates) > 0 {
		want := min(shareCap, slots)
		if fixed {
			want = min(want, room-started)
		}
		k := sort.Search(len(candidates), func(k int) bool { return candidates[k].slots >= want })
		if k == len(candidates) {
			k = len(candidates) - 1 // nothing holds a whole chunk: the largest takes what it has
			if candidates[k].slots < p.smallestChunk(fixed, slots) {
				break
			}
			want = candidates[k].slots
		}
		assigned[candidates[k].index] = want * slotCores
		slots -= want
		if fixed {
			started += want
		} else {
			started++
		}
		candidates = append(candidates[:k], candidates[k+1:]...)
	}
	return assigned
}

// smallestChunk is the fewest slots an executor may get: one fixed-size
// executor, or the unit (less when fewer cores remain).
func (p *bestFit) smallestChunk(fixed bool, slots int) int {
	if fixed {
		return 1
	}
	return min(p.unit, slots)
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

func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}
