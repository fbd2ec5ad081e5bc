package share

import "math"

// Which executor may be taken for a need: the rule of Plan's doc
// comment, the fair share and the guarantee each queue keeps.

// eligible reports whether v may be taken for n, given what is already
// picked from v's queue for the same executor (extra).
func (p *planner) eligible(n Need, v int, extra Vec) bool {
	r := p.c.Running[v]
	if p.taken[v] || !p.c.Queues[r.Queue].Preempt {
		return false
	}
	if r.Queue == n.Queue {
		return r.Priority < n.Priority
	}
	if DominantShare(p.usage[n.Queue], p.c.Capacity) >= p.fairShare[n.Queue]-1e-9 {
		return false // the needing queue is owed nothing more
	}
	floor, returned := p.fairShare[r.Queue], false
	if n.Guaranteed && DominantShare(p.usage[n.Queue], p.c.Capacity) < p.guarantee[n.Queue]-1e-9 {
		// A guarantee is owed: the other's fair share gives way, never its
		// guarantee. What of the taken executors n's executor does not use
		// is free again for the other queue's next round, so only what n
		// uses counts against that guarantee: an executor of 4 cores taken
		// for one of 1 leaves the other 3 cores to give back (else a queue
		// holding whole 4-core workers, guaranteed 5 of 8 cores, could
		// never give up 3 for another's guarantee of 3).
		floor, returned = p.guarantee[r.Queue], true
	}
	u, use, capacity := p.usage[r.Queue], p.c.Use(v), p.c.Capacity
	after := 0.0
	for i := range u {
		taken := use[i]
		if extra != nil {
			taken += extra[i]
		}
		if returned {
			taken = min(taken, GuaranteeUse(n.Shape, p.left, p.c.Queues[n.Queue].Guarantee, p.usage[n.Queue], i))
		}
		x := u[i] - taken
		if x > 1e-9 && capacity[i] > 0 {
			after = max(after, x/capacity[i])
		}
	}
	return after >= floor-1e-9
}

// GuaranteeUse is the most that count executors of shape, for a queue
// holding usage and guaranteed guarantee, use of dimension i of what is
// taken for them within that guarantee: as many whole executors as reach
// the guarantee in every dimension it names (an executor is not split:
// one of 2 cores for a guarantee 1 core short uses 2), at most count.
// Beyond the guarantee they compete by fair share, as everyone does.
func GuaranteeUse(shape Vec, count int, guarantee, usage Vec, i int) float64 {
	if i >= len(shape) {
		return 0
	}
	k, named := 0, false
	for d, g := range guarantee {
		if g <= 0 || d >= len(shape) || shape[d] <= 0 {
			continue
		}
		named = true
		short := g
		if d < len(usage) {
			short -= usage[d]
		}
		k = max(k, int(math.Ceil(max(short, 0)/shape[d]-1e-9)))
	}
	if !named {
		k = count
	}
	return shape[i] * float64(min(k, count))
}
