package gpushare

import (
	"cmp"
	"math"
	"slices"

	"github.com/berth-cluster/berth/placement"
)

// Fragmentation against a workload, the measure of FGD (fgd.go) and of
// frag-fit (fragfit.go). A worker's free GPU capacity is judged against a
// list of typical executor shapes with their shares: for each shape, the
// free GPU thousandths the shape could not use on this worker are fragment
// (how "could not use" is judged is each policy's view). The worker's
// fragmentation is the share-weighted sum; both policies place an executor
// where it increases fragmentation the least.

// shape is one typical executor.
type shape struct {
	cores, milli, gpus int
	// mem is the memory it asks (MB), 0 where memory is not looked at:
	// TaskShape has none, so frag-fit learns it from the apps it places.
	mem    int
	weight float64
}

// kind is what groups executors into one shape: cores, share, GPUs.
type kind [3]int

func (s shape) kind() kind   { return kind{s.cores, s.milli, s.gpus} }
func (r request) kind() kind { return kind{r.cores, r.milli, r.gpus} }

// popularity is the share of the workload the typical shapes cover (the
// paper's 95%): the rarest shapes beyond it are left out.
const popularity = 0.95

// typicalShapes groups the workload by (cores, GPU request), keeps the most
// frequent ones covering popularity of it, and normalises their weights.
func typicalShapes(workload []placement.TaskShape) []shape {
	byKind := map[kind]float64{}
	total := 0.0
	for _, t := range workload {
		if t.Weight <= 0 {
			continue
		}
		byKind[requestOf(placement.App{ResourcesPerExecutor: t.Resources}, t.Cores).kind()] += t.Weight
		total += t.Weight
	}
	shapes := make([]shape, 0, len(byKind))
	for k, w := range byKind {
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

// node is a worker's free capacity as fragmentation sees it.
type node struct {
	cores, mem int
	free       []int
}

// fragments is a worker's fragmentation seen two ways: next, FGD's (what
// the next executor of each shape could not use), and fill, frag-fit's
// (what executors of each shape could not use once the worker is filled
// with them). FGD computes next only.
type fragments struct{ next, fill float64 }

func (f fragments) minus(g fragments) fragments { return fragments{f.next - g.next, f.fill - g.fill} }

// fragment weighs, over the shapes, the free GPU thousandths each leaves
// unusable (unused: all of them for a shape without GPUs; else what
// unusable says of the shape, given the worker's total free).
func fragment(shapes []shape, free []int, unusable func(s shape, total int) int) float64 {
	total := gpuLeft(free)
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
	measure func(shapes []shape, n node) fragments
	shapes  []shape
	learn   bool
	seen    map[kind]float64
	changed bool
	// memory: the shapes ask memory too, each the most that an app of its
	// kind asked so far (the largest, so that a worker is not counted on
	// for executors it could not hold).
	memory bool
	mem    map[kind]int
	memo   map[memoKey]fragments
	buf    []int
}

// memoKey is a worker's state as fragmentation sees it (the free GPUs as a
// multiset, sorted), for workers of at most 8 GPUs.
type memoKey struct {
	cores, mem int
	n          int8
	gpus       [8]int16
}

const memoLimit = 1 << 20

func newFragMeasure(opts placement.Options, memory bool, measure func([]shape, node) fragments) fragMeasure {
	m := fragMeasure{measure: measure, memory: memory, mem: map[kind]int{}, memo: map[memoKey]fragments{}}
	if len(opts.Workload) > 0 {
		m.shapes = typicalShapes(opts.Workload)
	} else {
		m.learn, m.seen = true, map[kind]float64{}
	}
	return m
}

// observe counts app's shape when learning the workload, and its memory
// when the measure sees memory.
func (m *fragMeasure) observe(app placement.App) {
	r := requestOf(app, app.CoresPerExecutor)
	k := r.kind()
	if m.learn {
		m.seen[k]++
		m.changed = true
	}
	if m.memory && r.memory > m.mem[k] {
		m.mem[k] = r.memory
		for i := range m.shapes {
			if m.shapes[i].kind() == k {
				m.shapes[i].mem = r.memory
			}
		}
		clear(m.memo)
	}
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
	for i := range m.shapes {
		m.shapes[i].mem = m.mem[m.shapes[i].kind()]
	}
	clear(m.memo)
}

// of is the fragmentation of a worker in state n, memoised.
func (m *fragMeasure) of(n node) fragments {
	if len(n.free) > 8 {
		return m.measure(m.shapes, n)
	}
	k := memoKey{cores: n.cores, mem: n.mem, n: int8(len(n.free))}
	for i, f := range n.free {
		k.gpus[i] = int16(f)
	}
	slices.Sort(k.gpus[:len(n.free)])
	if v, ok := m.memo[k]; ok {
		return v
	}
	v := m.measure(m.shapes, n)
	if len(m.memo) >= memoLimit {
		clear(m.memo)
	}
	m.memo[k] = v
	return v
}

// delta is how much one executor of r placed on w (a share on GPU at, -1
// for the simulator's choice) increases w's fragmentation.
func (m *fragMeasure) delta(r request, w placement.Worker, at int) fragments {
	return m.deltaFrom(m.before(w), r, w, at)
}

// before is w's fragmentation as it is: what a share's GPUs on one worker
// are compared from, measured once for all of them.
func (m *fragMeasure) before(w placement.Worker) fragments { return m.of(m.nodeOf(w)) }

func (m *fragMeasure) nodeOf(w placement.Worker) node {
	n := node{cores: w.CoresFree, free: w.Resources[GPU]}
	if m.memory {
		n.mem = w.MemoryFreeMB
	}
	return n
}

// deltaFrom is delta from w's fragmentation before, already measured.
func (m *fragMeasure) deltaFrom(before fragments, r request, w placement.Worker, at int) fragments {
	n := m.nodeOf(w)
	m.buf = after(r, n.free, at, m.buf)
	n.cores, n.free = n.cores-r.cores, m.buf
	if m.memory {
		n.mem -= r.memory
	}
	return m.of(n).minus(before)
}

// bestGPU is the GPU of w a share of r takes by cost: the one whose use
// costs least (the lowest index among equals), and that cost; -1 and +Inf
// where the share fits on no GPU.
func (m *fragMeasure) bestGPU(r request, w placement.Worker, cost func(fragments) float64) (int, float64) {
	at, least := -1, math.Inf(1)
	before := m.before(w)
	for i, f := range w.Resources[GPU] {
		if f >= r.milli {
			if c := cost(m.deltaFrom(before, r, w, i)); c < least {
				at, least = i, c
			}
		}
	}
	return at, least
}

// assign places app's executors on ws by s's scores, once the measure has
// learnt from app and caught up with the workload it saw.
func (m *fragMeasure) assign(s scorer, unit int, app placement.App, ws []placement.Worker) []int {
	m.observe(app)
	m.refresh()
	return assignByScore(s, unit, app, ws)
}
