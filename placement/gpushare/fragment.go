package gpushare

import (
	"cmp"
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
	weight             float64
	// group is the constraint on the workers it may use: 0 for none (every
	// worker), else g for fragMeasure.groups[g-1].
	group int
}

// kind is what groups executors into one shape: cores, share, GPUs.
type kind [3]int

func (s shape) kind() kind   { return kind{s.cores, s.milli, s.gpus} }
func (r request) kind() kind { return kind{r.cores, r.milli, r.gpus} }

// Shape is one kind of executor of a workload with what a
// placement.TaskShape cannot say: its memory and which workers it may use. The policies
// that measure fragmentation (fgd, frag-fit) take a workload of these
// through SetWorkload instead of Options.Workload; the trace replay gives
// each task's GPU-model constraint this way.
type Shape struct {
	placement.TaskShape
	// MemoryMB is the memory it asks (0: not known; frag-fit then learns
	// the workload's memory from the apps it places).
	MemoryMB int
	// Constraint names the set of workers the shape may use (shapes are
	// grouped by it as by their size); "" for every worker. Shapes with
	// the same Constraint must have the same Fits.
	Constraint string
	// Fits reports whether the shape may use a worker, by id; nil for
	// every worker. It must not change for a worker (its answer is kept).
	Fits func(workerID string) bool
}

// WorkloadSetter is implemented by the policies that measure
// fragmentation against a workload (fgd, frag-fit). SetWorkload replaces
// Options.Workload: for each typical shape that may not use a worker, all
// of the worker's free GPU is fragment (the paper's simulator counts a
// node whose GPU model a typical task does not accept that way).
type WorkloadSetter interface {
	SetWorkload(shapes []Shape)
}

// WorkerMeeter is implemented by the policies that weigh the workload by
// the workers it may use (frag-fit; fgd takes it and ignores it):
// MeetWorkers tells them, before the first decision, the workers they
// will place on. Without it they learn the workers as they see them.
type WorkerMeeter interface {
	MeetWorkers(ws []placement.Worker)
}

// maxGroups is how many distinct constraints the typical shapes may carry;
// a shape beyond them is taken as unconstrained.
const maxGroups = 64

// popularity is the share of the workload the typical shapes cover (the
// paper's 95%): the rarest shapes beyond it are left out.
const popularity = 0.95

// typicalShapes groups the workload by (cores, GPU request, constraint),
// keeps the most frequent ones covering popularity of it, and normalises
// their weights. Each constraint of a kept shape becomes a group, whose
// Fits it returns (a shape's group g is groups[g-1]).
func typicalShapes(workload []Shape) ([]shape, []func(string) bool) {
	type key struct {
		kind
		constraint string
	}
	byKey := map[key]float64{}
	fits := map[string]func(string) bool{}
	total := 0.0
	for _, t := range workload {
		if t.Weight <= 0 {
			continue
		}
		k := key{requestOf(placement.App{ResourcesPerExecutor: t.Resources}, t.Cores).kind(), t.Constraint}
		if t.Fits == nil || k.kind[2] == 0 {
			k.constraint = "" // a CPU-only shape's fragment is all free GPU anyway
		} else if _, ok := fits[k.constraint]; !ok {
			fits[k.constraint] = t.Fits
		}
		byKey[k] += t.Weight
		total += t.Weight
	}
	type entry struct {
		shape
		constraint string
	}
	entries := make([]entry, 0, len(byKey))
	for k, w := range byKey {
		entries = append(entries, entry{shape{cores: k.kind[0], milli: k.kind[1], gpus: k.kind[2], weight: w}, k.constraint})
	}
	// The most frequent first; among equals the larger first (the paper's
	// order), then by constraint, so that the cut is deterministic.
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(b.weight, a.weight), cmp.Compare(b.cores, a.cores), cmp.Compare(b.milli, a.milli), cmp.Compare(b.gpus, a.gpus), cmp.Compare(a.constraint, b.constraint))
	})
	cum := 0.0
	for i, e := range entries {
		if cum >= popularity*total {
			entries = entries[:i]
			break
		}
		cum += e.weight
	}
	shapes := make([]shape, len(entries))
	var groups []func(string) bool
	index := map[string]int{}
	for i, e := range entries {
		shapes[i] = e.shape
		shapes[i].weight /= cum
		if e.constraint == "" {
			continue
		}
		g, ok := index[e.constraint]
		if !ok && len(groups) < maxGroups {
			g = len(groups)
			index[e.constraint] = g
			groups = append(groups, fits[e.constraint])
			ok = true
		}
		if ok {
			shapes[i].group = g + 1
		}
	}
	return shapes, groups
}

// taskShapes are Options.Workload's shapes, none constrained.
func taskShapes(workload []placement.TaskShape) []Shape {
	out := make([]Shape, len(workload))
	for i, t := range workload {
		out[i] = Shape{TaskShape: t}
	}
	return out
}

// node is a worker's free capacity as fragmentation sees it, and which
// groups of constrained shapes may use it (bit g-1 for group g).
type node struct {
	cores, mem int
	free       []int
	access     uint64
}

// reaches reports whether shape s may use n.
func (n node) reaches(s shape) bool { return s.group == 0 || n.access&(1<<(s.group-1)) != 0 }

// fragments is a worker's fragmentation seen two ways: next, FGD's (what
// the next executor of each shape could not use), and strand, frag-fit's
// (what the cores and memory the worker has left could not feed). FGD
// computes next only.
type fragments struct{ next, strand float64 }

func (f fragments) minus(g fragments) fragments {
	return fragments{f.next - g.next, f.strand - g.strand}
}

// fragment weighs, over the shapes, the free GPU thousandths each leaves
// unusable on n: all of them for a shape without GPUs or one that may not
// use n; else what unusable says of the shape, given the worker's total
// free.
func fragment(shapes []shape, n node, unusable func(s shape, total int) float64) float64 {
	total := gpuLeft(n.free)
	if total == 0 {
		return 0
	}
	frag := 0.0
	for _, s := range shapes {
		if s.gpus == 0 || !n.reaches(s) {
			frag += s.weight * float64(total)
			continue
		}
		frag += s.weight * unusable(s, total)
	}
	return frag
}

// maxMillis is how many distinct shares of a GPU views counts at once;
// with more, it measures shape by shape.
const maxMillis = 32

// views is FGD's view of n and, with strand, frag-fit's strand view: the
// same sums as fgdFragment and strandFragment, shape by shape in the same
// order (the same figures to the last bit), with the GPUs counted once per
// distinct share instead of once per shape.
func views(m *fragMeasure, n node, strand bool) fragments {
	total := gpuLeft(n.free)
	if total == 0 {
		return fragments{}
	}
	if len(m.millis) > maxMillis {
		f := fragments{next: fgdFragment(m.shapes, n)}
		if strand {
			f.strand = strandFragment(m.shapes, m.strand, n)
		}
		return f
	}
	var holds, small [maxMillis]int
	for j, milli := range m.millis {
		for _, g := range n.free {
			if g >= milli {
				holds[j]++
			} else {
				small[j] += g
			}
		}
	}
	stranded := 0.0
	if strand {
		stranded = float64(total) - fed(m.strand, n, total)
	}
	var f fragments
	for i, s := range m.shapes {
		if s.gpus == 0 || !n.reaches(s) {
			f.next += s.weight * float64(total)
			f.strand += s.weight * float64(total)
			continue
		}
		if j := m.shapeMilli[i]; holds[j] >= s.gpus && n.cores >= s.cores {
			f.next += s.weight * float64(small[j])
		} else {
			f.next += s.weight * float64(total)
		}
		f.strand += s.weight * stranded
	}
	if !strand {
		f.strand = 0
	}
	return f
}

// after is a worker's free GPUs once one executor of r took the GPUs the
// paper's simulator gives it: a share on GPU at (or the fullest that holds
// it when at is -1), whole GPUs the wholly free ones of lowest index.
func after(r request, free []int, at int, out []int) []int {
	out = append(out[:0], free...)
	switch {
	case r.gpus == 0:
	case r.share():
		if at < 0 {
			for i, f := range free {
				if f >= r.milli && (at < 0 || f < free[at]) {
					at = i
				}
			}
		}
		if at >= 0 {
			out[at] -= r.milli
		}
	default:
		need := r.gpus
		for i := 0; i < len(out) && need > 0; i++ {
			if out[i] >= placement.Whole {
				out[i] -= r.milli
				need--
			}
		}
	}
	return out
}
