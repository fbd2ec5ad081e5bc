package placement

import "math"

// Ranks: every indexed worker's place by ID, as an integer. The orders
// break their ties on the worker ID, and a cluster's workers tie a lot (a
// spread round moves thousands of workers among the few counts of free
// cores); comparing IDs as strings on every such tie was half the round.
// A slot's rank is handed out when its worker is first indexed, between
// its neighbours' by ID (x.ids keeps the workers in that order), and all
// ranks are handed out afresh, evenly spaced, when two neighbours leave no
// room between them: ranks only ever keep the order of the IDs, so the
// orders that hold the slots stay sorted through it.

// rankGap is the space between two neighbours' ranks handed out afresh:
// 24 workers indexed one after another between the same two before ranks
// are handed out again, and room for 2^40 workers.
const rankGap = 1 << 24

// rankNew puts s, a slot not yet indexed, in x.ids and gives it a rank.
func (x *Index) rankNew(s *slot) {
	x.ids.insert(s)
	c, i := x.ids.seek(s)
	always := func(*slot) bool { return true }
	lo, hi := uint64(0), uint64(math.MaxUint64)
	if prev := x.ids.last(c, i, always); prev != nil {
		lo = prev.rank
	}
	next := x.ids.first(c, i+1, always)
	if next != nil {
		hi = next.rank
	}
	switch {
	case next == nil && lo <= math.MaxUint64-rankGap:
		s.rank = lo + rankGap
	case hi-lo >= 2:
		s.rank = lo + (hi-lo)/2
	default:
		x.rerank()
	}
}

// rerank hands out every rank afresh, in the order of the IDs.
func (x *Index) rerank() {
	r := uint64(0)
	x.ids.walk(0, 0, func(s *slot) bool {
		r += rankGap
		s.rank = r
		return true
	})
}
