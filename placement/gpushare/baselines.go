package gpushare

import (
	"math"

	"github.com/berth-cluster/berth/placement"
)

// The paper's normalisation constants: the largest node of the trace's
// cluster, 128 cores (in milli-cores) and 8 GPUs. A policy also raises them
// to the largest free capacity it has seen, so that other units (whole
// cores) and larger machines stay in range.
const (
	maxSpecCores = 128000
	maxSpecGPU   = 8 * placement.Whole
)

// spec tracks the normalisation constants of a policy.
type spec struct{ cores, gpu int }

// norm is the largest machine's cores and GPU thousandths.
func (s spec) norm() (cores, gpu float64) {
	return float64(max(s.cores, maxSpecCores)), float64(max(s.gpu, maxSpecGPU))
}

func (s *spec) see(ws []placement.Worker) {
	if s.cores == 0 {
		s.cores, s.gpu = 1, 1
	}
	for _, w := range ws {
		s.cores = max(s.cores, w.CoresFree)
		s.gpu = max(s.gpu, len(w.Resources[GPU])*placement.Whole)
	}
}

// The policies that score by the largest machine they have seen
// (dot-product, gpu-clustering, gpu-best-fit) differ only in their scores.
var (
	newDotProduct    = bySpec("dot-product", dotProductScores)
	newGPUClustering = bySpec("gpu-clustering", gpuClusteringScores)
	newGPUBestFit    = bySpec("gpu-best-fit", gpuBestFitScores)
)

// specScored is such a policy: score is given the normalisation constants.
type specScored struct {
	base
	spec  spec
	score func(s spec, app placement.App, r request, ws []placement.Worker, out []int64)
}

func bySpec(name string, score func(spec, placement.App, request, []placement.Worker, []int64)) func(placement.Options) (placement.Policy, error) {
	return func(opts placement.Options) (placement.Policy, error) {
		return &specScored{base: newBase(name, opts), score: score}, nil
	}
}

func (p *specScored) Assign(app placement.App, ws []placement.Worker) []int {
	p.spec.see(ws)
	return assignByScore(p, p.unit, app, ws)
}

func (p *specScored) scores(app placement.App, r request, ws []placement.Worker, out []int64) {
	p.score(p.spec, app, r, ws, out)
}

// random: a uniformly random usable worker, and for a share a random GPU
// among those that hold it: the paper's Random, whose simulator draws one
// of the feasible nodes (RandomScore) and runs with -gpusel random (the
// other baselines take the fullest GPU that holds the share, FGD its own).
type randomPolicy struct{ base }

func newRandom(opts placement.Options) (placement.Policy, error) {
	return &randomPolicy{newBase("random", opts)}, nil
}

func (p *randomPolicy) Assign(app placement.App, ws []placement.Worker) []int {
	return assignEach(func(_ placement.App, _ request, ws []placement.Worker) int { return p.rng.IntN(len(ws)) }, p.unit, app, ws)
}

func (p *randomPolicy) PickResources(app placement.App, w placement.Worker) map[string][]int {
	return pickShare(app, w, func(r request, w placement.Worker) (at, seen int) {
		at = -1
		for i, f := range w.Resources[GPU] {
			if f >= r.milli {
				seen++
				if p.rng.IntN(seen) == 0 {
					at = i
				}
			}
		}
		return at, seen
	})
}

// dot-product: Tetris's alignment of the worker's free capacity with the
// request, both as (cores, GPU) normalised by the largest machine, the
// GPUs merged into one dimension; the paper's simulator ranks a smaller
// product higher (score 100·(1 − x·y/2)), which fills the workers whose
// free capacity matters least to the request.
func dotProductScores(s spec, _ placement.App, r request, ws []placement.Worker, out []int64) {
	c, g := s.norm()
	for i, w := range ws {
		dot := float64(w.CoresFree)/c*float64(r.cores)/c + float64(gpuLeft(w.Resources[GPU]))/g*float64(r.total())/g
		out[i] = int64(100 * (1 - dot/2))
	}
}

// gpu-clustering: executors of one kind (Tag) together: a worker running
// only that kind scores 75–100, one running it among others 50–75, an idle
// worker 25–50, a worker running other kinds 0–25; within a band, the
// fewer GPUs free the better. Executors without GPUs go anywhere.
func gpuClusteringScores(s spec, app placement.App, r request, ws []placement.Worker, out []int64) {
	tag := placement.Tag(app)
	_, norm := s.norm()
	g := int64(norm)
	for i, w := range ws {
		if r.gpus == 0 {
			out[i] = 0
			continue
		}
		kinds := 0
		for _, n := range w.Tags {
			if n > 0 {
				kinds++
			}
		}
		band := int64(0)
		switch {
		case w.Tags[tag] > 0 && kinds == 1:
			band = 75
		case w.Tags[tag] > 0:
			band = 50
		case kinds == 0:
			band = 25
		}
		out[i] = 25*(g-int64(gpuLeft(w.Resources[GPU])))/g + band
	}
}

// gpu-packing: first a GPU already shared that holds the share (the
// fuller the better), then free GPUs of a worker already in use (the
// fewer taken the better), then an idle worker (the fewer GPUs it has the
// better). Executors without GPUs go anywhere.
type gpuPacking struct{ base }

func newGPUPacking(opts placement.Options) (placement.Policy, error) {
	return &gpuPacking{newBase("gpu-packing", opts)}, nil
}

func (p *gpuPacking) Assign(app placement.App, ws []placement.Worker) []int {
	return assignByScore(p, p.unit, app, ws)
}

func (p *gpuPacking) scores(_ placement.App, r request, ws []placement.Worker, out []int64) {
	for i, w := range ws {
		out[i] = packingScore(r, w.Resources[GPU])
	}
}

func packingScore(r request, free []int) int64 {
	if r.gpus == 0 {
		return 0
	}
	idle := fullyFree(free)
	if idle == len(free) {
		return max(33-int64(idle), int64(idle))
	}
	// The GPUs it would take: the fullest that hold it.
	order := ascendingFree(free)
	need, idleUsed, leftOnUsed := r.gpus, 0, int64(0)
	for _, a := range order {
		if need == 0 {
			break
		}
		if free[a] >= r.milli {
			need--
			leftOnUsed += int64(free[a]) * 100 / placement.Whole
			if free[a] >= placement.Whole {
				idleUsed++
			}
		}
	}
	if idleUsed > 0 {
		return max(50-int64(idleUsed), 33)
	}
	return max(100-leftOnUsed/10, 50)
}

// ascendingFree lists a worker's GPUs from the least free to the most, in
// index order among equals.
func ascendingFree(free []int) []int {
	order := make([]int, len(free))
	for i := range order {
		order[i] = i
	}
	for i := 1; i < len(order); i++ { // insertion sort: at most a few GPUs, stable
		for j := i; j > 0 && free[order[j]] < free[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order
}

// gpu-best-fit: the worker left with the least free capacity, cores and
// GPUs weighted equally (each normalised by the largest machine), the
// scores stretched to 0–100 over the usable workers.
func gpuBestFitScores(s spec, _ placement.App, r request, ws []placement.Worker, out []int64) {
	c, g := s.norm()
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, w := range ws {
		left := 0.5*float64(w.CoresFree-r.cores)/c + 0.5*float64(gpuLeft(w.Resources[GPU])-r.total())/g
		out[i] = int64((1 - left) * 100)
		lo, hi = min(lo, out[i]), max(hi, out[i])
	}
	for i := range out {
		if hi == lo {
			out[i] = 0
		} else {
			out[i] = (out[i] - lo) * 100 / (hi - lo)
		}
	}
}
