package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// Room summarises the schedulable workers for waiting reasons: the largest
// of each quantity, not necessarily on one worker, and (sizes, free) what
// one worker holds of both.
type Room struct {
	// among: "" for every worker; for a constrained app, its constraints
	// ("with gpu-model in [T4]"), and the room is that of the workers
	// that satisfy them.
	among               string
	alive               int // workers new work may go to
	diskFull            int // live workers whose disk is full
	unhealthy           int // live workers marked unhealthy, disk not full
	maxCores, maxMemory int // largest worker
	maxFreeCores        int // most free cores on one worker
	maxFreeMemory       int // most free memory on one worker
	sizes, free         *sizes
}

// Rooms caches the rooms of a fleet (one pass over the workers each) until
// Reset: the master resets it when a worker's capacity, use or state
// changes, so that it is never stale; a large fleet's heartbeats change
// none.
type Rooms struct {
	all         *Room
	constrained map[string]Room // by constraints
}

// Reset forgets what was computed.
func (rs *Rooms) Reset() { *rs = Rooms{} }

// Of is the room of f's workers that satisfy cs (every worker for none).
func (rs *Rooms) Of(f Fleet, cs []wire.Constraint) Room {
	if len(cs) == 0 {
		if rs.all == nil {
			r := newRoom(f, nil)
			rs.all = &r
		}
		return *rs.all
	}
	parts := make([]string, len(cs))
	for i, x := range cs {
		parts[i] = x.String()
	}
	among := "with " + strings.Join(parts, " and ")
	if r, ok := rs.constrained[among]; ok {
		return r
	}
	r := newRoom(f, cs)
	r.among = among
	if rs.constrained == nil {
		rs.constrained = map[string]Room{}
	}
	rs.constrained[among] = r
	return r
}

func newRoom(f Fleet, cs []wire.Constraint) Room {
	r := Room{sizes: &sizes{}, free: &sizes{}}
	for w := range f.Workers() {
		if !w.Schedulable || !wire.Satisfies(w.Labels, cs) {
			continue
		}
		if !w.Placeable() {
			if w.DiskFull {
				r.diskFull++
			} else {
				r.unhealthy++
			}
			continue
		}
		r.alive++
		r.maxCores, r.maxMemory = max(r.maxCores, w.Cores), max(r.maxMemory, w.MemoryMB)
		r.maxFreeCores, r.maxFreeMemory = max(r.maxFreeCores, w.CoresFree), max(r.maxFreeMemory, w.MemoryFreeMB)
		r.sizes.add(w.Cores, w.MemoryMB)
		r.free.add(w.CoresFree, w.MemoryFreeMB)
	}
	return r
}

// satisfies reports whether w's labels satisfy s's constraints.
func satisfies(w Worker, s *AppSpec) bool { return wire.Satisfies(w.Labels, s.Constraints) }

// fitReason says why a process of cores and memory does not start now ("" if
// a worker has the room), naming what asks (an executor, the driver).
func (r Room) fitReason(what string, cores, memory int) string {
	switch {
	case r.alive == 0 && r.unhealthy > 0 && r.diskFull == 0:
		return fmt.Sprintf("waiting: every live worker %sis unhealthy (%d: processes of several apps failed there lately); berth status shows why, berth worker clear ID puts one back", r.with(), r.unhealthy)
	case r.alive == 0 && r.unhealthy > 0:
		return fmt.Sprintf("waiting: no live worker %stakes work: %d with a full disk, %d unhealthy; berth status shows why", r.with(), r.diskFull, r.unhealthy)
	case r.alive == 0 && r.diskFull > 0:
		return fmt.Sprintf("waiting: the disk of every live worker %sis full (%d); berth status shows why", r.with(), r.diskFull)
	case r.alive == 0 && r.among != "":
		return fmt.Sprintf("waiting: no live worker %s (berth status shows the workers' labels)", r.among)
	case r.alive == 0:
		return "waiting: no worker is alive"
	case !r.sizes.holds(cores, memory):
		return fmt.Sprintf("cannot start: no worker %shas %d cores and %d MB for %s (largest: %d cores, %d MB); ask for less or add a larger worker",
			r.with(), cores, memory, what, r.maxCores, r.maxMemory)
	case !r.free.holds(cores, memory):
		return fmt.Sprintf("waiting: no worker %shas %d free cores and %d MB free for %s (largest free: %d cores, %d MB)",
			r.with(), cores, memory, what, r.maxFreeCores, r.maxFreeMemory)
	}
	return ""
}

// with is the room's constraints for a sentence ("with gpu-model in [T4] "),
// or "".
func (r Room) with() string {
	if r.among == "" {
		return ""
	}
	return r.among + " "
}

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
