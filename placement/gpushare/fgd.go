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
	return &fgd{base: newBase("fgd", opts), frag: newFragMeasure(opts, fgdMeasure)}, nil
}

// fgdMeasure is FGD's view alone.
func fgdMeasure(m *fragMeasure, n node) fragments { return views(m, n, false) }

// fgdFragment is a worker's fragmentation against shapes as FGD measures
// it, in GPU thousandths: the next executor's view. For each shape, all of
// the free GPU when an executor of the shape does not fit at all (too few
// cores or GPUs, or a GPU model it does not accept), else the free GPU on
// GPUs with less free than the shape's share. Memory is not looked at.
func fgdFragment(shapes []shape, n node) float64 {
	return fragment(shapes, n, func(s shape, total int) float64 {
		holds, small := 0, 0
		for _, f := range n.free {
			if f >= s.milli {
				holds++
			} else {
				small += f
			}
		}
		if holds >= s.gpus && n.cores >= s.cores {
			return float64(small)
		}
		return float64(total)
	})
}

// SetWorkload measures against workload instead of Options.Workload.
func (p *fgd) SetWorkload(workload []Shape) { p.frag.setWorkload(workload) }

// MeetWorkers tells the policy the workers it will place on.
func (p *fgd) MeetWorkers(ws []placement.Worker) { p.frag.meet(ws) }

func (p *fgd) Assign(app placement.App, ws []placement.Worker) []int {
	return p.frag.assign(p, p.unit, app, ws)
}

func (p *fgd) scores(_ placement.App, r request, ws []placement.Worker, out []int64) {
	for i, w := range ws {
		n := p.frag.nodeOf(w)
		out[i] = p.score(r, n, p.frag.of(n))
	}
}

// measure is the policy's fragmentation measure (Fleet).
func (p *fgd) measure() *fragMeasure { return &p.frag }

// score is the score of a worker in state n (fragmentation before) for
// one executor of r.
func (p *fgd) score(r request, n node, before fragments) int64 {
	if r.share() {
		_, s := p.shareScoreFrom(r, n, before)
		return s
	}
	return fgdScore(p.frag.deltaFrom(before, r, n, -1).next)
}

// fgdScore is FGD's score of an increase d of fragmentation,
// int(100·sigmoid(−d/1000)), looked up: scoreTable gives the score of
// every whole d from −scoreSpan to scoreSpan whose unit interval holds no
// bound between two scores (−1 where one does, and then, as beyond the
// table, it is computed as the simulator does).
func fgdScore(d float64) int64 {
	if d > -scoreSpan && d < scoreSpan {
		// d+scoreSpan rounds up to 2·scoreSpan for d just below scoreSpan
		// (4599.9999999999995, say): such a d is computed.
		if i := int(d + scoreSpan); i < len(scoreTable) {
			if s := scoreTable[i]; s >= 0 {
				return int64(s)
			}
		}
	}
	return int64(100 / (1 + math.Exp(d/1000)))
}

// scoreSpan bounds the table: beyond ±4,600 thousandths the score is 0 or
// 99 (the bounds are at ±4,595).
const scoreSpan = 4600

// scoreTable[i] is the score of every d in [i−scoreSpan, i+1−scoreSpan),
// or −1 where the score changes within it.
var scoreTable = func() (t [2 * scoreSpan]int8) {
	for i := range t {
		lo, hi := float64(i-scoreSpan), float64(i+1-scoreSpan)
		a, b := int8(100/(1+math.Exp(lo/1000))), int8(100/(1+math.Exp(math.Nextafter(hi, lo)/1000)))
		t[i] = a
		if a != b {
			t[i] = -1
		}
	}
	return t
}()

// shareScore is the GPU a share takes under FGD (the first with the best
// score) and that score; -1, -1 where it fits on no GPU.
func (p *fgd) shareScore(r request, w placement.Worker) (int, int64) {
	n := p.frag.nodeOf(w)
	return p.shareScoreFrom(r, n, p.frag.of(n))
}

func (p *fgd) shareScoreFrom(r request, n node, before fragments) (int, int64) {
	at, cost := p.frag.bestGPU(r, n, before, func(d fragments) float64 { return -float64(fgdScore(d.next)) })
	if at < 0 {
		return -1, -1
	}
	return at, int64(-cost)
}

// PickResources gives a share the GPU FGD scored best.
func (p *fgd) PickResources(app placement.App, w placement.Worker) map[string][]int {
	return pickShare(app, w, p.shareScore)
}
