package placement

import (
	"math/bits"
	"slices"
)

// buckets is the Index's store for Spark's policies in the orders by free
// cores (and by ID alone): one bucket per count of free cores, and in each
// a bitmap of the workers by their position in ID order. The order of the
// workers is then the buckets' order (most free cores first, or fewest)
// and, within one, the bits' order: the policy's order with its tie on the
// ID. A launch that changes a worker's free cores clears one bit and sets
// another, where the sorted store (ordered) searched and shifted its
// chunks twice, most of a spread round.
//
// Positions are handed out by walking the workers in ID order (x.ids).
// A worker that joins waits (pending) for the next walk, which gives the
// ones waiting the next positions, in ID order, if their IDs sort after
// every laid-out worker's (a Spark-style ID starts with the time its
// worker started); a worker that left and comes back under its ID takes
// its old position again. Any other arrival would move every position
// after it: it marks the layout stale, and the next walk lays every worker
// out again (O(W), once however many joined).
//
// A bitmap spans every position, so the buckets cost 24 bytes per 64
// workers per count of free cores met: past maxBuckets counts (a cluster
// that counts millicores, say) the Index hands its workers back to the
// sorted store (overflow).
type buckets struct {
	desc bool // the most free cores first (cores-free-desc)
	flat bool // one bucket for every worker (worker-id)
	ids  *ordered
	// vals is the buckets in the walk's order, none empty; spare the
	// emptied ones, for reuse.
	vals, spare []*bucket
	// direct[c] is the bucket of c cores free, for the counts a worker
	// has (below directCores): found without a search.
	direct  []*bucket
	at      []*slot        // at[p-1]: the worker laid out at position p; nil once it left
	lastID  string         // the ID laid out last (at's end, left or not)
	pending []*slot        // joined since the last walk, not laid out
	vacated map[string]int // the positions of the workers that left, by ID
	words   int            // each bucket's bitmap, in 64-bit words (room for at to grow)
	stale   bool           // the next walk lays every worker out again
	// overflow: a worker's count of free cores would have made more than
	// maxBuckets buckets; it is in none, and the Index must move every
	// worker to the sorted store.
	overflow bool
}

// maxBuckets bounds the counts of free cores the buckets keep at once.
const maxBuckets = 512

// maxPending bounds the workers waiting for a position: past it, the next
// walk lays every worker out (as fast, and no list to search on removal).
const maxPending = 64

// bucket holds the workers with one count of free cores (every worker,
// when flat).
type bucket struct {
	cores int
	bits  []uint64 // bit p: the worker at position p
	words []uint64 // bit i: bits[i] is not 0 (a walk of 100,000 positions looks at 25 words)
	// peaks[i] is at least the most that the workers of bits[i] have free,
	// so that a walk for an executor none of them can hold skips 64 at a
	// time; exact again once walked over whole.
	peaks []peak
	count int
}

// value is the count of free cores that places s in a bucket.
func (b *buckets) value(s *slot) int {
	if b.flat {
		return 0
	}
	return s.w.CoresFree
}

// directCores bounds the counts of free cores looked up in direct.
const directCores = 1 << 12

// lookup is the bucket for cores, or nil.
func (b *buckets) lookup(cores int) *bucket {
	if cores >= 0 && cores < len(b.direct) {
		return b.direct[cores]
	}
	if i, ok := b.find(cores); ok {
		return b.vals[i]
	}
	return nil
}

// setDirect makes k (or nil) direct's bucket for cores, if it is direct's.
func (b *buckets) setDirect(cores int, k *bucket) {
	if cores < 0 || cores >= directCores {
		return
	}
	if cores >= len(b.direct) {
		b.direct = append(b.direct, make([]*bucket, cores+1-len(b.direct))...)
	}
	b.direct[cores] = k
}

// find is the index in b.vals where the bucket for cores is, or would go.
func (b *buckets) find(cores int) (int, bool) {
	return slices.BinarySearchFunc(b.vals, cores, func(k *bucket, cores int) int {
		if b.desc {
			return cmpInt(cores, k.cores)
		}
		return cmpInt(k.cores, cores)
	})
}

func (b *buckets) insert(s *slot) {
	if b.stale {
		return // laid out with every other on the next walk
	}
	if s.pos == 0 {
		if p, ok := b.vacated[s.w.ID]; ok { // back where it was
			delete(b.vacated, s.w.ID)
			s.pos, b.at[p-1] = p, s
		} else {
			if b.pending = append(b.pending, s); len(b.pending) > maxPending {
				b.stale, b.pending = true, b.pending[:0]
			}
			return
		}
	}
	v := b.value(s)
	k := b.lookup(v)
	if k == nil {
		if len(b.vals) == maxBuckets {
			b.overflow = true
			return
		}
		k = b.newBucket(v)
		i, _ := b.find(v)
		b.vals = slices.Insert(b.vals, i, k)
		b.setDirect(v, k)
	}
	p := s.pos - 1
	word := p / 64
	k.bits[word] |= 1 << (p % 64)
	k.words[word/64] |= 1 << (word % 64)
	k.peaks[word] = peak{max(k.peaks[word].cores, s.w.CoresFree), max(k.peaks[word].memory, s.w.MemoryFreeMB)}
	k.count++
}

func (b *buckets) remove(s *slot) {
	if b.stale {
		return // the next layout will not see it unless it is back
	}
	if s.pos == 0 {
		if i := slices.Index(b.pending, s); i >= 0 {
			b.pending = slices.Delete(b.pending, i, i+1)
		}
		return
	}
	v := b.value(s)
	k := b.lookup(v)
	p := s.pos - 1
	word := p / 64
	if k == nil || k.bits[word]&(1<<(p%64)) == 0 {
		panic("placement: bucket out of order") // a slot was changed while in the order
	}
	if k.bits[word] &^= 1 << (p % 64); k.bits[word] == 0 {
		k.words[word/64] &^= 1 << (word % 64)
	}
	if k.count--; k.count == 0 {
		i, _ := b.find(v)
		b.vals = slices.Delete(b.vals, i, i+1)
		b.setDirect(v, nil)
		b.spare = append(b.spare, k)
	}
}

// placePending gives the workers waiting the next positions, in ID order,
// if their IDs sort after every laid-out worker's (the ones that left too:
// their positions stay taken until the next layout); else it marks the
// layout stale.
func (b *buckets) placePending() {
	slices.SortFunc(b.pending, byIDString)
	if len(b.at) > 0 && len(b.pending) > 0 && b.lastID >= b.pending[0].w.ID {
		b.stale, b.pending = true, b.pending[:0]
		return
	}
	for _, s := range b.pending {
		b.at, b.lastID = append(b.at, s), s.w.ID
		s.pos = len(b.at)
		b.grow()
		b.insert(s)
	}
	clear(b.pending)
	b.pending = b.pending[:0]
}

// grow widens every bucket's bitmap to hold every position.
func (b *buckets) grow() {
	if need := (len(b.at) + 63) / 64; need > b.words {
		b.words = max(need, 2*b.words)
		for _, k := range b.vals {
			k.bits = append(k.bits, make([]uint64, b.words-len(k.bits))...)
			k.words = append(k.words, make([]uint64, (b.words+63)/64-len(k.words))...)
			k.peaks = append(k.peaks, make([]peak, b.words-len(k.peaks))...)
		}
	}
}

// leave forgets s, taken out of its bucket for good. Its position stays
// its ID's until the next layout, which comes once more than half the
// positions are such holes: a cluster whose workers come and go with ever
// later IDs does not grow its bitmaps for ever.
func (b *buckets) leave(s *slot) {
	if b.stale || s.pos == 0 {
		return
	}
	b.at[s.pos-1] = nil
	if b.vacated == nil {
		b.vacated = map[string]int{}
	}
	if b.vacated[s.w.ID] = s.pos; len(b.vacated) > len(b.at)/2 {
		b.stale = true
	}
}

// newBucket is an empty bucket for cores, of the layout's size.
func (b *buckets) newBucket(cores int) *bucket {
	words := b.words
	var k *bucket
	if n := len(b.spare); n > 0 {
		k, b.spare = b.spare[n-1], b.spare[:n-1]
	} else {
		k = &bucket{}
	}
	k.cores, k.count = cores, 0
	k.bits = zeroed(k.bits, words)
	k.words = zeroed(k.words, (words+63)/64)
	k.peaks = zeroed(k.peaks, words)
	return k
}

// layout hands out positions in ID order to every indexed worker and puts
// each in its bucket afresh.
func (b *buckets) layout() {
	b.spare = append(b.spare, b.vals...)
	b.vals = b.vals[:0]
	clear(b.direct)
	b.at = b.at[:0]
	b.ids.walk(0, 0, func(s *slot) bool {
		b.at = append(b.at, s)
		s.pos = len(b.at)
		return true
	})
	clear(b.at[len(b.at):cap(b.at)]) // no old workers kept alive
	clear(b.vacated)
	clear(b.pending)
	b.pending = b.pending[:0]
	b.words, b.lastID = (len(b.at)+63)/64, ""
	if n := len(b.at); n > 0 {
		b.lastID = b.at[n-1].w.ID
	}
	b.stale = false
	for _, s := range b.at {
		b.insert(s)
	}
}

// settle lays out the workers that joined (or every worker), so that a
// walk sees them all; the Index then checks overflow.
func (b *buckets) settle() {
	if len(b.pending) > 0 {
		b.placePending()
	}
	if b.stale {
		b.layout()
	}
}

// walk calls fn on the workers in order, from the first with at least
// first cores free (skipping, 64 at a time, those that cannot have first
// cores and memory MB free), until fn returns false. The buckets must be
// settled (the Index settles them before a round).
func (b *buckets) walk(first, memory int, fn func(*slot) bool) {
	for _, k := range b.vals {
		if !b.flat && k.cores < first {
			if b.desc {
				return // the rest have fewer
			}
			continue
		}
		for i, nz := range k.words {
			for ; nz != 0; nz &= nz - 1 {
				word := i*64 + bits.TrailingZeros64(nz)
				if p := k.peaks[word]; p.cores < first || p.memory < memory {
					continue
				}
				var seen peak // over the whole word: its exact peak
				for w := k.bits[word]; w != 0; w &= w - 1 {
					s := b.at[word*64+bits.TrailingZeros64(w)]
					seen = peak{max(seen.cores, s.w.CoresFree), max(seen.memory, s.w.MemoryFreeMB)}
					if !fn(s) {
						return
					}
				}
				k.peaks[word] = seen
			}
		}
	}
}
