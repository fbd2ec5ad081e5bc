package gpushare

import (
	"github.com/berth-cluster/berth/placement"
)

// frag-fit is berth's own policy for GPU-sharing workloads: FGD's score
// (100·sigmoid(−Δ/1000), ties to the first in the order given) of a
// measure that sees what limits allocation on a production trace and FGD
// does not. docs/PLACEMENT.md says what, and by how much it wins.
//
// The measure blends two views of a worker's fragmentation against the
// workload's typical shapes, both counting cores, GPUs and memory:
//
//   - next, FGD's (fgdFragment): the free GPU the next executor of each
//     shape could not use;
//   - fill (fillFragment): the free GPU that executors of each shape could
//     not use once as many of them as the worker's cores, memory and GPUs
//     hold were placed. FGD's view cannot see that a worker with three free
//     GPUs and cores (or memory) for one typical executor strands two, nor
//     that six free GPUs serve 4-GPU executors only four at a time.
//
// Memory: the workload's shapes carry none (placement.TaskShape), so each
// asks the most memory an app of its kind asked so far.
//
// The blend depends on the executor placed. For a share, next weighs
// shareNext: a share's placement is above all the choice of the GPU whose
// leftover it shapes, which is what FGD's view measures; fill then sends
// it, among GPUs FGD finds alike, where it strands no GPU behind the cores
// or memory it takes. (With fill weighing half, shares go to idle workers
// whose cores do not bind, and break up the whole workers that 8-GPU
// executors need.) For whole GPUs and none, the GPUs left are whole either
// way, and the two views weigh alike.
type fragFit struct {
	base
	frag fragMeasure
}

const (
	shareNext = 0.9
	otherNext = 0.5
)

func newFragFit(opts placement.Options) (placement.Policy, error) {
	return &fragFit{base: newBase("frag-fit", opts), frag: newFragMeasure(opts, true, fragFitMeasure)}, nil
}

// fragFitMeasure is both views.
func fragFitMeasure(shapes []shape, n node) fragments {
	return fragments{next: fgdFragment(shapes, n), fill: fillFragment(shapes, n)}
}

// fillFragment is the fill view: for each shape, the free GPU thousandths
// that executors of that shape alone, as many as the worker's cores,
// memory and GPUs hold, would leave unused.
func fillFragment(shapes []shape, n node) float64 {
	return fragment(shapes, n.free, func(s shape, total int) int {
		slots := 0
		if s.milli < placement.Whole {
			for _, f := range n.free {
				slots += f / s.milli
			}
		} else {
			slots = fullyFree(n.free) / s.gpus
		}
		if s.cores > 0 {
			slots = min(slots, n.cores/s.cores)
		}
		if s.mem > 0 {
			slots = min(slots, n.mem/s.mem)
		}
		return total - slots*s.milli*s.gpus
	})
}

// increase is frag-fit's Δ: the views' increases d blended for r.
func increase(r request, d fragments) float64 {
	a := otherNext
	if r.share() {
		a = shareNext
	}
	return a*d.next + (1-a)*d.fill
}

func (p *fragFit) Assign(app placement.App, ws []placement.Worker) []int {
	return p.frag.assign(p, p.unit, app, ws)
}

func (p *fragFit) scores(_ placement.App, r request, ws []placement.Worker, out []int64) {
	for i, w := range ws {
		var d float64
		if r.share() {
			_, d = p.bestShare(r, w)
		} else {
			d = increase(r, p.frag.delta(r, w, -1))
		}
		out[i] = fgdScore(d)
	}
}

// bestShare is the GPU a share of r should take on w (the least increase,
// the lowest index among equals) and that increase.
func (p *fragFit) bestShare(r request, w placement.Worker) (int, float64) {
	return p.frag.bestGPU(r, w, func(d fragments) float64 { return increase(r, d) })
}

// PickResources gives a share the GPU whose use increases the measure
// least.
func (p *fragFit) PickResources(app placement.App, w placement.Worker) map[string][]int {
	return pickShare(app, w, p.bestShare)
}
