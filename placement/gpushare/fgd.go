package gpushare

import (
	"cmp"
	"math"
	"slices"

	"github.com/berth-cluster/berth/placement"
)

// Fragmentation as FGD measures it. A worker's free GPU capacity is judged
// against the workload, a list of typical executor shapes with their
// shares: for each shape, the free GPU thousandths the shape could not use
// on this worker are fragment (all of them when an executor of the shape
// does not fit at all, or asks no GPU; else those on GPUs with less free
// than the shape's share). The worker's fragmentation is the share-weighted
// sum. FGD places an executor where it increases fragmentation the least.

// shape is one typical executor.
type shape struct {
	cores, milli, gpus int
	weight             float64
}

// popularity is the share of the workload the typical shapes cover (the
// paper's 95%): the rarest shapes beyond it are left out.
const popularity = 0.95

// typicalShapes groups the workload by (cores, GPU request), keeps the most
// frequent ones covering popularity of it, and normalises their weights.
func typicalShapes(workload []placement.TaskShape) []shape {
	byKey := map[[3]int]float64{}
	total := 0.0
	for _, t := range workload {
		if t.Weight <= 0 {
			continue
		}
		r := requestOf(placement.App{ResourcesPerExecutor: t.Resources}, t.Cores)
		byKey[[3]int{r.cores, r.milli, r.gpus}] += t.Weight
		total += t.Weight
	}
	shapes := make([]shape, 0, len(byKey))
	for k, w := range byKey {
		shapes = append(shapes, shape{cores: k[0], milli: k[1], gpus: k[2], weight: w})
	}
	// The most frequent first; among equals the larger first (the paper's
	// order), so that the cut is deterministic.
	slices.SortFunc(shapes, func(a, b shape) int {
		return cmp.Or(cmp.Compare(b.weight, a.weight), cmp.Compare(b.cores, a.cores), cmp.Compare(b.milli, a.milli), cmp.Compare(b.gpus, a.gpus))
	})
	cum := 0.0
	for i, s := range shapes {
		if cum >= popularity*total {
			shapes = shapes[:i]
			break
		}
		cum += s.weight
	}
	for i := range shapes {
		shapes[i].weight /= cum
	}
	return shapes
}

// fgdFragment is a worker's fragmentation against shapes as FGD measures
// it, in GPU thousandths: the next executor's view.
func fgdFragment(shapes []shape, cores int, free []int) float64 {
	return fragment(shapes, free, func(s shape, total int) int {
		holds, small := 0, 0
		for _, f := range free {
			if f >= s.milli {
				holds++
			} else {
				small += f
			}
		}
		if holds >= s.gpus && cores >= s.cores {
			return small
		}
		return total
	})
}

// fragment weighs, over the shapes, the free GPU thousandths each leaves
// unusable (unused: all of them for a shape without GPUs; else what
// unusable says of the shape, given the worker's total free).
func fragment(shapes []shape, free []int, unusable func(s shape, total int) int) float64 {
	total := 0
	for _, f := range free {
		total += f
	}
	if total == 0 {
		return 0
	}
	frag := 0.0
	for _, s := range shapes {
		if s.gpus == 0 {
			frag += s.weight * float64(total)
			continue
		}
		frag += s.weight * float64(unusable(s, total))
	}
	return frag
}

// after is a worker's free GPUs once one executor of r took the GPUs the
// paper's simulator gives it: a share on GPU at (or the fullest that holds
// it when at is -1), whole GPUs the wholly free ones of lowest index.
func after(r request, free []int, at int, out []int) []int {
	out = append(out[:0], free...)
	switch {
	case r.gpus == 0:
	case r.share() && at >= 0:
		out[at] -= r.milli
	default:
		need := r.gpus
		for _, a := range ascendingFree(free) {
			if need == 0 {
				break
			}
			if out[a] >= r.milli {
				out[a] -= r.milli
				need--
			}
		}
	}
	return out
}

// fragMeasure measures fragmentation against a workload: the one given, or
// the shapes of the apps it has seen.
type fragMeasure struct {
	measure func(shapes []shape, cores int, free []int) float64
	shapes  []shape
	learn   bool
	seen    map[[3]int]float64
	changed bool
	memo    map[memoKey]float64
	buf     []int
}

// memoKey is a worker's state as fragmentation sees it (the free GPUs as a
// multiset, sorted), for workers of at most 8 GPUs.
type memoKey struct {
	cores int
	n     int8
	gpus  [8]int16
}

const memoLimit = 1 << 20

func newFragMeasure(opts placement.Options, measure func([]shape, int, []int) float64) fragMeasure {
	m := fragMeasure{measure: measure, memo: map[memoKey]float64{}}
	if len(opts.Workload) > 0 {
		m.shapes = typicalShapes(opts.Workload)
	} else {
		m.learn, m.seen = true, map[[3]int]float64{}
	}
	return m
}

// observe counts app's shape when learning the workload.
func (m *fragMeasure) observe(app placement.App) {
	if !m.learn {
		return
	}
	r := requestOf(app, app.CoresPerExecutor)
	m.seen[[3]int{r.cores, r.milli, r.gpus}]++
	m.changed = true
}

// refresh rebuilds the shapes from what was observed.
func (m *fragMeasure) refresh() {
	if !m.changed {
		return
	}
	m.changed = false
	workload := make([]placement.TaskShape, 0, len(m.seen))
	for k, w := range m.seen {
		var res map[string]int
		if k[2] > 0 {
			res = map[string]int{GPU: k[1] * k[2]}
		}
		workload = append(workload, placement.TaskShape{Cores: k[0], Resources: res, Weight: w})
	}
	m.shapes = typicalShapes(workload)
	clear(m.memo)
}

// of is the fragmentation of a worker with cores and free GPUs, memoised.
func (m *fragMeasure) of(cores int, free []int) float64 {
	if len(free) > 8 {
		return m.measure(m.shapes, cores, free)
	}
	k := memoKey{cores: cores, n: int8(len(free))}
	for i, f := range free {
		k.gpus[i] = int16(f)
	}
	slices.Sort(k.gpus[:len(free)])
	if v, ok := m.memo[k]; ok {
		return v
	}
	v := m.measure(m.shapes, cores, free)
	if len(m.memo) >= memoLimit {
		clear(m.memo)
	}
	m.memo[k] = v
	return v
}

// delta is how much one executor of r placed on w (a share on GPU at, -1
// for the simulator's choice) increases w's fragmentation.
func (m *fragMeasure) delta(r request, w placement.Worker, at int) float64 {
	free := w.Resources[GPU]
	before := m.of(w.CoresFree, free)
	m.buf = after(r, free, at, m.buf)
	return m.of(w.CoresFree-r.cores, m.buf) - before
}

// bestShare is the GPU a share of r should take on w (the least increase
// of fragmentation, the lowest index among equals) and that increase.
func (m *fragMeasure) bestShare(r request, w placement.Worker) (int, float64) {
	at, least := -1, math.Inf(1)
	for i, f := range w.Resources[GPU] {
		if f >= r.milli {
			if d := m.delta(r, w, i); d < least {
				at, least = i, d
			}
		}
	}
	return at, least
}

// fgd is the paper's FGD: each usable worker scores 100·sigmoid(−Δ/1000),
// Δ the increase of its fragmentation (for a share, on its best GPU);
// ties at random.
type fgd struct {
	base
	frag fragMeasure
}

func newFGD(opts placement.Options) (placement.Policy, error) {
	return &fgd{base: newBase("fgd", opts), frag: newFragMeasure(opts, fgdFragment)}, nil
}

func (p *fgd) Assign(app placement.App, ws []placement.Worker) []int {
	p.frag.observe(app)
	p.frag.refresh()
	return assignByScore(p, p.unit, app, ws)
}

func (p *fgd) scores(_ placement.App, r request, ws []placement.Worker, out []int64) {
	for i, w := range ws {
		if r.share() {
			_, out[i] = p.shareScore(r, w)
		} else {
			out[i] = fgdScore(p.frag.delta(r, w, -1))
		}
	}
}

// fgdScore is FGD's score of an increase d of fragmentation.
func fgdScore(d float64) int64 { return int64(100 / (1 + math.Exp(d/1000))) }

// shareScore is the GPU a share takes under FGD (the first with the best
// score) and that score.
func (p *fgd) shareScore(r request, w placement.Worker) (int, int64) {
	at, top := -1, int64(-1)
	for i, f := range w.Resources[GPU] {
		if f >= r.milli {
			if s := fgdScore(p.frag.delta(r, w, i)); s > top {
				at, top = i, s
			}
		}
	}
	return at, top
}

// PickResources gives a share the GPU FGD scored best.
func (p *fgd) PickResources(app placement.App, w placement.Worker) map[string][]int {
	r := requestOf(app, app.CoresPerExecutor)
	if !r.share() {
		return nil
	}
	if at, _ := p.shareScore(r, w); at >= 0 {
		return map[string][]int{GPU: {at}}
	}
	return nil
}

// fillFragment is the fragmentation frag-fit adds to FGD's (fragfit.go): for
// each shape, the free GPU thousandths that executors of that shape alone,
// as many as the worker's cores and GPUs hold, would leave unused.
func fillFragment(shapes []shape, cores int, free []int) float64 {
	return fragment(shapes, free, func(s shape, total int) int {
		slots := 0
		if s.milli < placement.Whole {
			for _, f := range free {
				slots += f / s.milli
			}
		} else {
			whole := 0
			for _, f := range free {
				if f >= placement.Whole {
					whole++
				}
			}
			slots = whole / s.gpus
		}
		if s.cores > 0 {
			slots = min(slots, cores/s.cores)
		}
		return total - slots*s.milli*s.gpus
	})
}
