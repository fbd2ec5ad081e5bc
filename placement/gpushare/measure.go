package gpushare

// The measure of fragmentation kept up to date: the workload's typical
// shapes (given, or learnt from the apps seen), each worker's fragments
// memoized, and the choice of the GPUs that add the least (fragment.go
// says what is measured).

import (
	"math"
	"slices"

	"github.com/berth-cluster/berth/placement"
)

// fragMeasure measures fragmentation against a workload: the one given, or
// the shapes of the apps it has seen.
type fragMeasure struct {
	measure func(m *fragMeasure, n node) fragments
	// shapes are the typical shapes with the weights the measure uses;
	// counts their own weights (their share of the workload), which
	// frag-fit weighs by where they may go (hostWeighted).
	shapes []shape
	counts []float64
	// groups are the constraints of the typical shapes (shape.group), and
	// access what each worker met so far may use of them (by id).
	groups []func(string) bool
	access map[string]uint64
	// learn: no workload was given; the measure learns it from the apps
	// it sees (seen: how many of each kind), looked at again (changed)
	// when a kind is seen for the first time and when the apps seen double
	// (apps, learntAt: their number then), and changed only when its
	// shapes or their shares moved by more than learntDrift.
	learn          bool
	seen           map[kind]float64
	apps, learntAt int
	changed        bool
	memo           map[memoKey]fragments
	buf            []int
	// gen counts the changes of the measure (shapes, weights, ratios):
	// what was measured under an earlier one is stale.
	gen uint64
	// millis are the shapes' distinct shares of a GPU, shapeMilli each
	// shape's index in them (views).
	millis, shapeMilli []int

	// frag-fit. memory: the measure looks at free memory (the strand
	// view). hostWeighted: a constrained shape weighs its share times the
	// GPUs of all workers over the GPUs of those it may use (gpus,
	// groupGPUs: of the workers met so far; weighedAt: gpus when last
	// weighed).
	memory          bool
	hostWeighted    bool
	gpus, weighedAt int
	groupGPUs       []int
	strand          strandRatios
}

// strandRatios are the cores and memory the workload's GPU executors ask
// per GPU thousandth (frag-fit's strand view). Memory comes from the
// workload when it says (memGiven), else from the GPU apps placed so far
// (memSum, milliSum over apps), looked at when their number is a power of
// two and changed if it moved by more than learntDrift.
type strandRatios struct {
	cores, mem       float64
	memGiven         bool
	memSum, milliSum float64
	apps             int
}

// memoKey is a worker's state as fragmentation sees it (the free GPUs as a
// multiset, sorted), for workers of at most 8 GPUs.
type memoKey struct {
	cores, mem int
	access     uint64
	n          int8
	gpus       [8]int16
}

const memoLimit = 1 << 20

func newFragMeasure(opts placement.Options, measure func(*fragMeasure, node) fragments) fragMeasure {
	m := fragMeasure{measure: measure, memo: map[memoKey]fragments{}, access: map[string]uint64{}}
	if len(opts.Workload) > 0 {
		m.setWorkload(taskShapes(opts.Workload))
	} else {
		m.learn, m.seen = true, map[kind]float64{}
	}
	return m
}

// setWorkload measures against workload from now on (SetWorkload).
func (m *fragMeasure) setWorkload(workload []Shape) {
	m.learn, m.seen, m.changed = false, nil, false
	m.setShapes(typicalShapes(workload))
	m.strand = strandRatios{}
	var cores, mem, milli float64
	for _, t := range workload {
		if r := requestOf(placement.App{ResourcesPerExecutor: t.Resources}, t.Cores); r.gpus > 0 && t.Weight > 0 {
			cores += t.Weight * float64(t.Cores)
			mem += t.Weight * float64(t.MemoryMB)
			milli += t.Weight * float64(r.total())
		}
	}
	if milli > 0 {
		m.strand.cores = cores / milli
		m.strand.mem = mem / milli
		m.strand.memGiven = mem > 0
	}
	clear(m.access)
	m.gpus, m.weighedAt, m.groupGPUs = 0, 0, make([]int, len(m.groups))
}

// setShapes installs the typical shapes and their groups.
func (m *fragMeasure) setShapes(shapes []shape, groups []func(string) bool) {
	m.shapes, m.groups = shapes, groups
	m.counts = make([]float64, len(shapes))
	m.millis, m.shapeMilli = m.millis[:0], make([]int, len(shapes))
	for i, s := range shapes {
		m.counts[i] = s.weight
		j := slices.Index(m.millis, s.milli)
		if j < 0 {
			j = len(m.millis)
			m.millis = append(m.millis, s.milli)
		}
		m.shapeMilli[i] = j
	}
	m.weighedAt = 0
	m.stale()
}

// stale marks what was measured so far as out of date.
func (m *fragMeasure) stale() {
	m.gen++
	clear(m.memo)
}

// observe counts app's shape when learning the workload, and its memory
// when the measure learns the workload's memory.
func (m *fragMeasure) observe(app placement.App) {
	r := requestOf(app, app.CoresPerExecutor)
	if m.learn {
		k := r.kind()
		if m.seen[k] == 0 || m.apps+1 >= 2*m.learntAt {
			m.changed = true
		}
		m.seen[k]++
		m.apps++
	}
	if !m.memory || m.strand.memGiven || r.gpus == 0 {
		return
	}
	m.strand.memSum += float64(r.memory)
	m.strand.milliSum += float64(r.total())
	if m.strand.apps++; m.strand.apps&(m.strand.apps-1) == 0 {
		if mem := m.strand.memSum / m.strand.milliSum; !near(mem, m.strand.mem) {
			m.strand.mem = mem
			m.stale()
		}
	}
}

// learntDrift is how far a share of the workload (absolute) or a ratio
// (relative) learnt from the apps may move before the measure is learnt
// again: a new measure changes every worker's score, which a master of
// 100,000 workers then works out again, and a steady mix of apps moves its
// shares by less than this from one doubling of the apps seen to the next.
const learntDrift = 0.02

// near reports whether learnt ratios a and b are within learntDrift of
// each other.
func near(a, b float64) bool {
	return math.Abs(a-b) <= learntDrift*math.Max(math.Abs(a), math.Abs(b))
}

// nearShapes reports whether shapes a and b measure alike: each shape's
// share in one is within learntDrift (of the whole workload) of its share
// in the other, a shape missing from one counting as a share of 0 there
// (a kind near the cut of the typical shapes comes and goes).
func nearShapes(a, b []shape) bool {
	share := func(in []shape, s shape) float64 {
		for _, t := range in {
			if t.kind() == s.kind() && t.group == s.group {
				return t.weight
			}
		}
		return 0
	}
	for _, s := range a {
		if math.Abs(s.weight-share(b, s)) > learntDrift {
			return false
		}
	}
	for _, s := range b {
		if share(a, s) == 0 && s.weight > learntDrift {
			return false
		}
	}
	return len(a) > 0 && len(b) > 0
}

// refresh rebuilds the shapes from what was observed (learning), and
// frag-fit's weights from the workers met.
func (m *fragMeasure) refresh() {
	if m.changed {
		m.changed, m.learntAt = false, m.apps
		workload := make([]placement.TaskShape, 0, len(m.seen))
		var cores, milli float64
		for k, w := range m.seen {
			var res map[string]int
			if k[2] > 0 {
				res = map[string]int{GPU: k[1] * k[2]}
				cores += w * float64(k[0])
				milli += w * float64(k[1]*k[2])
			}
			workload = append(workload, placement.TaskShape{Cores: k[0], Resources: res, Weight: w})
		}
		shapes, groups := typicalShapes(taskShapes(workload))
		strandCores := m.strand.cores
		if milli > 0 {
			strandCores = cores / milli
		}
		// The same shapes, with shares and ratio near what they were,
		// measure as before: what was measured stays (a stream of apps of
		// one shape keeps the measure of the first one; a steady mix, the
		// measure learnt from its first apps).
		if len(shapes) == 0 || len(groups) > 0 || len(m.groups) > 0 || !nearShapes(shapes, m.shapes) || !near(strandCores, m.strand.cores) {
			m.setShapes(shapes, groups)
			m.strand.cores = strandCores
		}
	}
	if m.hostWeighted && len(m.groups) > 0 && m.gpus > 0 && m.gpus >= m.weighedAt+m.weighedAt/16+1 {
		m.weighedAt = m.gpus
		for i, s := range m.shapes {
			m.shapes[i].weight = m.counts[i]
			if g := s.group; g > 0 && m.groupGPUs[g-1] > 0 {
				m.shapes[i].weight *= float64(m.gpus) / float64(m.groupGPUs[g-1])
			}
		}
		m.stale()
	}
}

// of is the fragmentation of a worker in state n, memoised.
func (m *fragMeasure) of(n node) fragments {
	if len(n.free) > 8 {
		return m.measure(m, n)
	}
	k := memoKey{cores: n.cores, mem: n.mem, access: n.access, n: int8(len(n.free))}
	for i, f := range n.free {
		k.gpus[i] = int16(f)
	}
	slices.Sort(k.gpus[:len(n.free)])
	if v, ok := m.memo[k]; ok {
		return v
	}
	v := m.measure(m, n)
	if len(m.memo) >= memoLimit {
		clear(m.memo)
	}
	m.memo[k] = v
	return v
}

func (m *fragMeasure) nodeOf(w placement.Worker) node {
	n := node{cores: w.CoresFree, free: w.Resources[GPU], access: m.accessOf(w)}
	if m.memory {
		n.mem = w.MemoryFreeMB
	}
	return n
}

// accessOf is which groups of constrained shapes may use w (by its id,
// kept), and counts its GPUs when it is new.
func (m *fragMeasure) accessOf(w placement.Worker) uint64 {
	if len(m.groups) == 0 {
		return 0
	}
	a, ok := m.access[w.ID]
	if !ok {
		n := len(w.Resources[GPU])
		m.gpus += n
		for g, fits := range m.groups {
			if fits(w.ID) {
				a |= 1 << g
				m.groupGPUs[g] += n
			}
		}
		m.access[w.ID] = a
	}
	return a
}

// meet counts workers the measure will see (MeetWorkers), so that
// frag-fit weighs its shapes by the whole cluster from the first decision.
func (m *fragMeasure) meet(ws []placement.Worker) {
	for _, w := range ws {
		m.accessOf(w)
	}
}

// deltaFrom is how much one executor of r placed on a worker in state n
// (a share on GPU at, -1 for the simulator's choice) increases its
// fragmentation, before: n's, already measured.
func (m *fragMeasure) deltaFrom(before fragments, r request, n node, at int) fragments {
	m.buf = after(r, n.free, at, m.buf)
	n.cores, n.free = n.cores-r.cores, m.buf
	if m.memory {
		n.mem -= r.memory
	}
	return m.of(n).minus(before)
}

// bestGPU is the GPU of a worker in state n (fragmentation before) a
// share of r takes by cost: the one whose use costs least (the lowest
// index among equals), and that cost; -1 and +Inf where the share fits on
// no GPU. GPUs with as much free as one already tried leave the same
// worker, and cost the same.
func (m *fragMeasure) bestGPU(r request, n node, before fragments, cost func(fragments) float64) (int, float64) {
	at, least := -1, math.Inf(1)
	for i, f := range n.free {
		if f >= r.milli && !slices.Contains(n.free[:i], f) {
			if c := cost(m.deltaFrom(before, r, n, i)); c < least {
				at, least = i, c
			}
		}
	}
	return at, least
}

// prepare readies the measure for placing app: it learns from app and
// catches up with the workload it saw and the workers it met.
func (m *fragMeasure) prepare(app placement.App) {
	m.observe(app)
	m.refresh()
}

// assign places app's executors on ws by s's scores, once the measure is
// prepared for app.
func (m *fragMeasure) assign(s scorer, unit int, app placement.App, ws []placement.Worker) []int {
	m.prepare(app)
	return assignByScore(s, unit, app, ws)
}
