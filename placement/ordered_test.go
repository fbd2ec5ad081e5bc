package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Every chunk's peak is at least the most its workers have free, through
// inserts, removals, splits and emptied chunks (a peak too low would hide a
// worker from every walk), and exact again after a walk over it.
func TestOrderedPeaksFollowTheChunks(t *testing.T) {
	o := &ordered{cmp: func(a, b *slot) int {
		switch {
		case a.w.CoresFree != b.w.CoresFree:
			return b.w.CoresFree - a.w.CoresFree
		case a.w.ID < b.w.ID:
			return -1
		case a.w.ID > b.w.ID:
			return 1
		}
		return 0
	}}
	r := rand.New(rand.NewPCG(3, 4))
	in := map[string]*slot{}
	for step := range 20000 {
		id := fmt.Sprintf("w%04d", r.IntN(2000))
		if s, ok := in[id]; ok {
			o.remove(s)
			delete(in, id)
		} else {
			s := &slot{w: Worker{ID: id, CoresFree: r.IntN(64), MemoryFreeMB: r.IntN(1 << 20)}}
			o.insert(s)
			in[id] = s
		}
		if len(o.peaks) != len(o.chunks) {
			t.Fatalf("step %d: %d peaks for %d chunks", step, len(o.peaks), len(o.chunks))
		}
		for c, ch := range o.chunks {
			if p, exact := o.peaks[c], peakOf(ch); p.cores < exact.cores || p.memory < exact.memory {
				t.Fatalf("step %d: chunk %d's peak %+v below its workers' %+v", step, c, p, exact)
			}
		}
		if step%100 == 0 {
			o.walkPeaks(0, 0, 0, 0, func(*slot) bool { return true })
			for c, ch := range o.chunks {
				if o.peaks[c] != peakOf(ch) {
					t.Fatalf("step %d: after a walk, chunk %d's peak %+v, its workers' %+v", step, c, o.peaks[c], peakOf(ch))
				}
			}
		}
	}
	if len(o.chunks) < 4 {
		t.Fatalf("only %d chunks: the splits were not tried", len(o.chunks))
	}
}
