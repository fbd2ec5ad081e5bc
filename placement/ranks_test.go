package placement

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Ranks follow the IDs through puts in the worst order for them (each new
// ID below every other, so each rank halves the room left and they are
// handed out afresh again and again), random puts and deletions; the
// index's order stays the policy's order over its workers throughout: in
// the sorted store, whose ties are ranks (a memory order, bestfit), and in
// the buckets.
func TestRanksFollowTheIDs(t *testing.T) {
	for _, c := range []struct{ policy, order string }{
		{"spread", OrderMemoryFreeDesc}, {"pack", OrderMemoryFreeAsc}, {"bestfit", ""}, {"spread", ""},
	} {
		t.Run(c.policy+"/"+c.order, func(t *testing.T) { ranksFollowTheIDs(t, c.policy, c.order) })
	}
}

func ranksFollowTheIDs(t *testing.T, policy, order string) {
	p, err := New(policy, Options{Order: order})
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(p)
	r := rand.New(rand.NewPCG(7, 8))
	reranks := 0
	check := func(step int) {
		t.Helper()
		var prev *slot
		x.ids.walk(0, 0, func(s *slot) bool {
			if prev != nil && (prev.w.ID >= s.w.ID || prev.rank >= s.rank) {
				t.Fatalf("step %d: %q (rank %d) before %q (rank %d)", step, prev.w.ID, prev.rank, s.w.ID, s.rank)
			}
			prev = s
			return true
		})
		got := x.Workers()
		want := slices.Clone(got)
		p.Order(want)
		if bf, ok := p.(*bestFit); ok { // its index: free cores ascending, then its order
			slices.SortFunc(want, func(a, b Worker) int { return cmp.Or(cmp.Compare(a.CoresFree, b.CoresFree), bf.cmp(a, b)) })
		}
		if !slices.EqualFunc(got, want, func(a, b Worker) bool { return a.ID == b.ID }) {
			t.Fatalf("step %d: index order %v, policy order %v", step, ids(got), ids(want))
		}
	}
	for i := range 600 {
		before := x.Len()
		x.Put(Worker{ID: fmt.Sprintf("w%05d", 100000-i), CoresFree: r.IntN(4), MemoryFreeMB: 100 * r.IntN(3)})
		if x.Len() != before+1 {
			t.Fatalf("step %d: %d workers after a put, want %d", i, x.Len(), before+1)
		}
		if first := x.ids.chunks[0][0]; first.rank == rankGap && i > 0 {
			reranks++
		}
		if i%10 == 0 {
			check(i)
		}
	}
	if reranks < 10 {
		t.Fatalf("ranks were handed out afresh %d times: the test did not exercise it", reranks)
	}
	for i := range 3000 {
		id := fmt.Sprintf("w%05d", 99000+r.IntN(1200))
		if r.IntN(3) == 0 {
			x.Delete(id)
		} else {
			x.Put(Worker{ID: id, CoresFree: r.IntN(4), MemoryFreeMB: 100 * r.IntN(3)})
		}
		if i%50 == 0 {
			check(600 + i)
		}
	}
	check(3600)
}

func ids(ws []Worker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.ID
	}
	return out
}
