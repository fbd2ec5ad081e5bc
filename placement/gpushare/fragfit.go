package gpushare

import (
	"github.com/berth-cluster/berth/placement"
)

// frag-fit is berth's own policy for GPU-sharing workloads: FGD's score
// (100·sigmoid(−Δ/1000), ties to the first in the order given) of FGD's
// fragmentation plus what FGD does not see. docs/PLACEMENT.md says why,
// and by how much it wins.
//
// Δ is the increase of two views of a worker's fragmentation against the
// workload's typical shapes, added:
//
//   - next, FGD's (fgdFragment): the free GPU the next executor of each
//     shape could not use, for lack of GPU, of cores, or because the shape
//     does not accept the worker's GPU model;
//   - strand (strandFragment): the free GPU that the worker's free cores
//     and memory could not feed, were its GPUs filled by the workload's
//     mix: GPUs need, on average, the cores and memory per GPU that the
//     workload's GPU executors ask. FGD's view asks only whether one more
//     executor fits, and finds a worker with three free GPUs and cores for
//     one executor as good as one with cores for three.
//
// And a shape constrained to some workers (a GPU model) weighs its share
// of the workload times the cluster's GPUs over the GPUs it may use: its
// demand falls on those workers only. FGD weighs every shape by its share,
// and lets executors that could go anywhere take the GPUs that only some
// shapes may use.
type fragFit struct {
	base
	frag fragMeasure
}

// strandWeight weighs the strand view against FGD's, both in GPU
// thousandths.
const strandWeight = 1.0

func newFragFit(opts placement.Options) (placement.Policy, error) {
	p := &fragFit{base: newBase("frag-fit", opts), frag: newFragMeasure(opts, fragFitMeasure)}
	p.frag.memory, p.frag.hostWeighted = true, true
	return p, nil
}

// fragFitMeasure is both views.
func fragFitMeasure(m *fragMeasure, n node) fragments { return views(m, n, true) }

// strandFragment is the strand view: for each shape that may use the
// worker and asks GPUs, the free GPU thousandths its free cores and memory
// could not feed at the workload's ratios (all of them for the others, as
// in FGD's view).
func strandFragment(shapes []shape, ratio strandRatios, n node) float64 {
	return fragment(shapes, n, func(_ shape, total int) float64 { return float64(total) - fed(ratio, n, total) })
}

// fed is how much of total free GPU thousandths n's free cores and memory
// feed at the workload's ratios.
func fed(ratio strandRatios, n node, total int) float64 {
	fed := float64(total)
	if ratio.cores > 0 {
		fed = min(fed, float64(n.cores)/ratio.cores)
	}
	if ratio.mem > 0 {
		fed = min(fed, float64(n.mem)/ratio.mem)
	}
	return fed
}

// increase is frag-fit's Δ of the views' increases d.
func increase(d fragments) float64 { return d.next + strandWeight*d.strand }

// SetWorkload measures against workload instead of Options.Workload.
func (p *fragFit) SetWorkload(workload []Shape) { p.frag.setWorkload(workload) }

// MeetWorkers tells the policy the workers it will place on (constrained
// shapes are weighed by the GPUs they may use from the first decision).
func (p *fragFit) MeetWorkers(ws []placement.Worker) { p.frag.meet(ws) }

func (p *fragFit) Assign(app placement.App, ws []placement.Worker) []int {
	return p.frag.assign(p, p.unit, app, ws)
}

func (p *fragFit) scores(_ placement.App, r request, ws []placement.Worker, out []int64) {
	for i, w := range ws {
		n := p.frag.nodeOf(w)
		out[i] = p.score(r, n, p.frag.of(n))
	}
}

// measure is the policy's fragmentation measure (Fleet).
func (p *fragFit) measure() *fragMeasure { return &p.frag }

// score is the score of a worker in state n (fragmentation before) for
// one executor of r.
func (p *fragFit) score(r request, n node, before fragments) int64 {
	var d float64
	if r.share() {
		_, d = p.frag.bestGPU(r, n, before, increase)
	} else {
		d = increase(p.frag.deltaFrom(before, r, n, -1))
	}
	return fgdScore(d)
}

// bestShare is the GPU a share of r should take on w (the least increase,
// the lowest index among equals) and that increase.
func (p *fragFit) bestShare(r request, w placement.Worker) (int, float64) {
	n := p.frag.nodeOf(w)
	return p.frag.bestGPU(r, n, p.frag.of(n), increase)
}

// PickResources gives a share the GPU whose use increases the measure
// least.
func (p *fragFit) PickResources(app placement.App, w placement.Worker) map[string][]int {
	return pickShare(app, w, p.bestShare)
}
