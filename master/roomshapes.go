package master

import (
	"cmp"
	"slices"
)

// A worker's room has two sides, cores and memory, and one process needs
// both on one worker: the largest cores and the largest memory of a
// cluster may be on two workers, neither of which can hold a process
// that both could (3 cores and 1500 MB, on a worker of 3 cores and 1 GB
// and one of 1 core and 8 GB, was said to fit, then waited for ever
// saying it waited for its fair share). So the room keeps, of every
// worker, its cores and memory together: the frontier of those no other
// worker has at least as much of both.

// sizes collects workers' (cores, memory) and answers whether one holds
// a process.
type sizes struct {
	most     map[int]int // cores → most memory of a worker of those cores
	frontier []coreMem   // built from most when first asked, cores descending
}

type coreMem struct{ cores, memory int }

func (s *sizes) add(cores, memory int) {
	if s.most == nil {
		s.most = map[int]int{}
	}
	if m, ok := s.most[cores]; !ok || memory > m {
		s.most[cores] = memory
	}
	s.frontier = nil
}

// holds reports whether one worker has cores and memory.
func (s *sizes) holds(cores, memory int) bool {
	if s.frontier == nil && len(s.most) > 0 {
		for c, m := range s.most {
			s.frontier = append(s.frontier, coreMem{c, m})
		}
		slices.SortFunc(s.frontier, func(a, b coreMem) int { return cmp.Compare(b.cores, a.cores) })
		kept, best := s.frontier[:0], -1
		for _, x := range s.frontier { // keep those with more memory than any of more cores
			if x.memory > best {
				kept, best = append(kept, x), x.memory
			}
		}
		s.frontier = kept
	}
	for _, x := range s.frontier {
		if x.cores < cores {
			return false // cores descending: none after it has enough
		}
		if x.memory >= memory {
			return true
		}
	}
	return false
}
