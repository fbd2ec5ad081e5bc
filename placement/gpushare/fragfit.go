package gpushare

import "github.com/berth-cluster/berth/placement"

// frag-fit is berth's own policy for GPU-sharing workloads: FGD with a
// measure that looks further than the next executor, and ties that go to
// the fullest worker. docs/PLACEMENT.md says what it sees that FGD does not,
// and by how much it wins (on three of the trace's four task lists; it ties
// FGD on the fourth).
//
// The measure is the mean of two fragmentations against the workload's
// typical shapes: FGD's (fgdFragment: the free GPU the next executor of
// each shape could not use) and fillFragment (the free GPU that executors
// of each shape could not use once as many of them as the worker's cores
// and GPUs hold were placed). FGD's alone cannot see that a worker with
// three free GPUs and cores for one typical executor strands two GPUs, nor
// that six free GPUs serve 4-GPU executors only four at a time; on the
// trace every task of fewer than 4 GPUs that failed under FGD up to 100%
// arrived had GPUs free only on workers without the cores (or memory) for
// it.
//
// The score is FGD's: 100·sigmoid(−Δ/1000), Δ the increase of the measure,
// an integer, so that placements within some tens of GPU thousandths of
// each other are equal and the tie-break decides: among equals the worker
// left with the fewest free GPU thousandths, then the fewest free cores,
// then the first in the order given (the fullest takes the executor).
type fragFit struct {
	base
	frag fragMeasure
}

// blendFragment is frag-fit's measure.
func blendFragment(shapes []shape, cores int, free []int) float64 {
	return (fgdFragment(shapes, cores, free) + fillFragment(shapes, cores, free)) / 2
}

func newFragFit(opts placement.Options) (placement.Policy, error) {
	return &fragFit{base: newBase("frag-fit", opts), frag: newFragMeasure(opts, blendFragment)}, nil
}

func (p *fragFit) Assign(app placement.App, ws []placement.Worker) []int {
	p.frag.observe(app)
	p.frag.refresh()
	return assignEach(p.choose, p.unit, app, ws)
}

func (p *fragFit) choose(_ placement.App, r request, ws []placement.Worker) int {
	at := -1
	var top int64
	var gpuAfter, coresAfter int
	for i, w := range ws {
		var d float64
		if r.share() {
			_, d = p.frag.bestShare(r, w)
		} else {
			d = p.frag.delta(r, w, -1)
		}
		score := fgdScore(d)
		g, c := gpuLeft(w.Resources[GPU])-r.total(), w.CoresFree-r.cores
		if at < 0 || score > top || (score == top && (g < gpuAfter || (g == gpuAfter && c < coresAfter))) {
			at, top, gpuAfter, coresAfter = i, score, g, c
		}
	}
	return at
}

// PickResources gives a share the GPU whose use increases the measure
// least.
func (p *fragFit) PickResources(app placement.App, w placement.Worker) map[string][]int {
	r := requestOf(app, app.CoresPerExecutor)
	if !r.share() {
		return nil
	}
	if at, _ := p.frag.bestShare(r, w); at >= 0 {
		return map[string][]int{GPU: {at}}
	}
	return nil
}
