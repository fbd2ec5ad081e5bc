package gpushare

import (
	"math"

	"github.com/berth-cluster/berth/placement"
)

// fgd is the paper's FGD: each usable worker scores 100·sigmoid(−Δ/1000),
// Δ the increase of its fragmentation as FGD measures it (fgdFragment; for
// a share, on its best GPU); ties to the first in the order given.
type fgd struct {
	base
	frag fragMeasure
}

func newFGD(opts placement.Options) (placement.Policy, error) {
	return &fgd{base: newBase("fgd", opts), frag: newFragMeasure(opts, false, fgdMeasure)}, nil
}

// fgdMeasure is FGD's view alone.
func fgdMeasure(shapes []shape, n node) fragments {
	return fragments{next: fgdFragment(shapes, n)}
}

// fgdFragment is a worker's fragmentation against shapes as FGD measures
// it, in GPU thousandths: the next executor's view. For each shape, all of
// the free GPU when an executor of the shape does not fit at all (too few
// cores, memory or GPUs), else the free GPU on GPUs with less free than the
// shape's share. (FGD's shapes ask no memory; frag-fit's do.)
func fgdFragment(shapes []shape, n node) float64 {
	return fragment(shapes, n.free, func(s shape, total int) int {
		holds, small := 0, 0
		for _, f := range n.free {
			if f >= s.milli {
				holds++
			} else {
				small += f
			}
		}
		if holds >= s.gpus && n.cores >= s.cores && n.mem >= s.mem {
			return small
		}
		return total
	})
}

func (p *fgd) Assign(app placement.App, ws []placement.Worker) []int {
	return p.frag.assign(p, p.unit, app, ws)
}

func (p *fgd) scores(_ placement.App, r request, ws []placement.Worker, out []int64) {
	for i, w := range ws {
		if r.share() {
			_, out[i] = p.shareScore(r, w)
		} else {
			out[i] = fgdScore(p.frag.delta(r, w, -1).next)
		}
	}
}

// fgdScore is FGD's score of an increase d of fragmentation.
func fgdScore(d float64) int64 { return int64(100 / (1 + math.Exp(d/1000))) }

// shareScore is the GPU a share takes under FGD (the first with the best
// score) and that score; -1, -1 where it fits on no GPU.
func (p *fgd) shareScore(r request, w placement.Worker) (int, int64) {
	at, cost := p.frag.bestGPU(r, w, func(d fragments) float64 { return -float64(fgdScore(d.next)) })
	if at < 0 {
		return -1, -1
	}
	return at, int64(-cost)
}

// PickResources gives a share the GPU FGD scored best.
func (p *fgd) PickResources(app placement.App, w placement.Worker) map[string][]int {
	return pickShare(app, w, p.shareScore)
}
