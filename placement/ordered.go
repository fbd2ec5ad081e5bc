package placement

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// ordered keeps workers sorted by a policy's order (whose ties end with the
// worker ID, so no two differ by nothing) in chunks of at most 2*chunkSize:
// an insert or a removal moves at most one chunk's elements, and the
// workers can be walked in order from any position. It is the Index's
// store: a launch moves a few workers, never the whole cluster.
type ordered struct {
	cmp    slotCmp
	chunks [][]*slot
	peaks  []peak // peaks[c]: the most any worker of chunks[c] has free
	n      int
}

// peak is at least the most cores and memory any worker of a chunk has
// free: a walk for an executor no worker of the chunk can hold skips the
// chunk whole (an app that fits nowhere costs a 100,000-worker round 400
// chunk checks, not 100,000 worker checks).
type peak struct{ cores, memory int }

func peakOf(ch []*slot) peak {
	var p peak
	for _, s := range ch {
		p.cores, p.memory = max(p.cores, s.w.CoresFree), max(p.memory, s.w.MemoryFreeMB)
	}
	return p
}

// slot is one indexed worker. Its Worker is the index's own copy (its
// resources too) and changes only while the slot is out of the order.
// rank is its place among the indexed workers by ID (ranks.go): the orders
// break their ties on it, an integer, where comparing the IDs themselves
// was half of a spread round.
type slot struct {
	w    Worker
	rank uint64
	pos  int // its position in the buckets' layout plus one; 0: not laid out (buckets.go)
	// saved is the checkpoint its worker was last saved under
	// (checkpoint.go): a slot is saved once per checkpoint.
	saved uint64
}

// slotCmp orders two slots; negative means a comes first.
type slotCmp func(a, b *slot) int

// byRank orders slots by rank (by worker ID).
func byRank(a, b *slot) int { return cmp.Compare(a.rank, b.rank) }

// byIDString orders slots by their workers' IDs: the order ranks are
// handed out in.
func byIDString(a, b *slot) int { return strings.Compare(a.w.ID, b.w.ID) }

const chunkSize = 256

// build fills o from slots already sorted by o.cmp.
func (o *ordered) build(sorted []*slot) {
	o.chunks, o.peaks, o.n = nil, nil, len(sorted)
	for len(sorted) > 0 {
		n := min(chunkSize, len(sorted))
		o.chunks = append(o.chunks, append(make([]*slot, 0, 2*chunkSize), sorted[:n]...))
		o.peaks = append(o.peaks, peakOf(sorted[:n]))
		sorted = sorted[n:]
	}
}

// seek is the position of the first worker not before probe.
func (o *ordered) seek(probe *slot) (int, int) {
	c := sort.Search(len(o.chunks), func(c int) bool {
		ch := o.chunks[c]
		return o.cmp(ch[len(ch)-1], probe) >= 0
	})
	if c == len(o.chunks) {
		return c, 0
	}
	ch := o.chunks[c]
	return c, sort.Search(len(ch), func(i int) bool { return o.cmp(ch[i], probe) >= 0 })
}

func (o *ordered) insert(s *slot) {
	o.n++
	if len(o.chunks) == 0 {
		o.chunks = [][]*slot{append(make([]*slot, 0, 2*chunkSize), s)}
		o.peaks = []peak{peakOf(o.chunks[0])}
		return
	}
	c, i := o.seek(s)
	if c == len(o.chunks) {
		c = len(o.chunks) - 1
		i = len(o.chunks[c])
	}
	ch := append(o.chunks[c], nil)
	copy(ch[i+1:], ch[i:])
	ch[i] = s
	o.chunks[c] = ch
	o.peaks[c] = peak{max(o.peaks[c].cores, s.w.CoresFree), max(o.peaks[c].memory, s.w.MemoryFreeMB)}
	if len(ch) >= 2*chunkSize { // split
		right := append(make([]*slot, 0, 2*chunkSize), ch[chunkSize:]...)
		o.chunks[c] = ch[:chunkSize]
		o.chunks = slices.Insert(o.chunks, c+1, right)
		o.peaks[c] = peakOf(o.chunks[c])
		o.peaks = slices.Insert(o.peaks, c+1, peakOf(right))
	}
}

// remove takes s out; it must be in the order with the key it was put in
// with.
func (o *ordered) remove(s *slot) {
	c, i := o.seek(s)
	if c == len(o.chunks) || i >= len(o.chunks[c]) || o.chunks[c][i] != s {
		panic("placement: index out of order") // a slot was changed while in the order
	}
	o.n--
	ch := o.chunks[c]
	copy(ch[i:], ch[i+1:])
	ch[len(ch)-1] = nil
	o.chunks[c] = ch[:len(ch)-1]
	if len(o.chunks[c]) == 0 {
		o.chunks = append(o.chunks[:c], o.chunks[c+1:]...)
		o.peaks = append(o.peaks[:c], o.peaks[c+1:]...)
	}
	// A removal leaves the chunk's peak as it was: still at least what its
	// workers have (a walk skips nothing it should not), made exact again
	// by the next walk over the whole chunk. Worked out here, it cost a
	// spread round a scan of the chunk per launch.
}

// walk calls fn on each worker in order from position (c, i) until fn
// returns false.
func (o *ordered) walk(c, i int, fn func(*slot) bool) {
	for ; c < len(o.chunks); c, i = c+1, 0 {
		for _, s := range o.chunks[c][i:] {
			if !fn(s) {
				return
			}
		}
	}
}

// walkPeaks is walk over the chunks whose peak could hold cores and
// memory; the others are skipped whole.
func (o *ordered) walkPeaks(c, i, cores, memory int, fn func(*slot) bool) {
	for ; c < len(o.chunks); c, i = c+1, 0 {
		if p := o.peaks[c]; p.cores < cores || p.memory < memory {
			continue
		}
		var seen peak // over the whole chunk: its exact peak
		for _, s := range o.chunks[c][i:] {
			seen = peak{max(seen.cores, s.w.CoresFree), max(seen.memory, s.w.MemoryFreeMB)}
			if !fn(s) {
				return
			}
		}
		if i == 0 {
			o.peaks[c] = seen
		}
	}
}

// search is the position of the first worker for which pred holds; pred
// must be false then true along the order.
func (o *ordered) search(pred func(*Worker) bool) (int, int) {
	c := sort.Search(len(o.chunks), func(c int) bool {
		ch := o.chunks[c]
		return pred(&ch[len(ch)-1].w)
	})
	if c == len(o.chunks) {
		return c, 0
	}
	ch := o.chunks[c]
	return c, sort.Search(len(ch), func(i int) bool { return pred(&ch[i].w) })
}

// first is the first worker from position (c, i) on for which ok holds, or nil.
func (o *ordered) first(c, i int, ok func(*slot) bool) *slot {
	var found *slot
	o.walk(c, i, func(s *slot) bool {
		if ok(s) {
			found = s
		}
		return found == nil
	})
	return found
}

// last is the last worker before position (c, i) for which ok holds, or
// nil: it walks the order backwards from there.
func (o *ordered) last(c, i int, ok func(*slot) bool) *slot {
	for i--; c >= 0; {
		if c < len(o.chunks) {
			for ; i >= 0; i-- {
				if s := o.chunks[c][i]; ok(s) {
					return s
				}
			}
		}
		if c--; c >= 0 {
			i = len(o.chunks[c]) - 1
		}
	}
	return nil
}
