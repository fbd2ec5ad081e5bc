// Package share divides a cluster's capacity between queues: weighted
// Dominant Resource Fairness (Ghodsi et al., NSDI 2011) over cores, memory
// and every custom resource, with guarantees served first and limits never
// passed (YARN's FairScheduler and Kueue's fair sharing do the same), and
// decides which executors to preempt when a queue is owed capacity that
// others hold. It is pure: no clock, no I/O; the master calls it each
// scheduling round.
package share

import "math"

// Vec is an amount of every resource of one computation, indexed as its
// Dims: cores, memory (MB), then each custom resource (thousandths of an
// address). An unbounded limit is +Inf.
type Vec []float64

// Dims names a computation's resources, in the order of its Vecs.
type Dims []string

// Zero is a Vec of n zeros; Unbounded one of n +Inf.
func Zero(n int) Vec { return make(Vec, n) }

func Unbounded(n int) Vec {
	v := make(Vec, n)
	for i := range v {
		v[i] = math.Inf(1)
	}
	return v
}

// Add returns a+b; Sub a-b; Min and Max componentwise.
func (a Vec) Add(b Vec) Vec { return zip(a, b, func(x, y float64) float64 { return x + y }) }
func (a Vec) Sub(b Vec) Vec { return zip(a, b, func(x, y float64) float64 { return x - y }) }
func (a Vec) Min(b Vec) Vec { return zip(a, b, math.Min) }
func (a Vec) Max(b Vec) Vec { return zip(a, b, math.Max) }

// Scale returns a×k.
func (a Vec) Scale(k float64) Vec {
	out := make(Vec, len(a))
	for i, x := range a {
		out[i] = x * k
	}
	return out
}

func zip(a, b Vec, f func(x, y float64) float64) Vec {
	out := make(Vec, len(a))
	for i := range a {
		out[i] = f(a[i], b[i])
	}
	return out
}

// Fits reports whether a ≤ b in every resource (with a little slack for
// rounding).
func (a Vec) Fits(b Vec) bool {
	for i := range a {
		if a[i] > b[i]+1e-9 {
			return false
		}
	}
	return true
}

// IsZero reports whether a holds nothing.
func (a Vec) IsZero() bool {
	for _, x := range a {
		if x > 1e-9 {
			return false
		}
	}
	return true
}

// DominantShare is a's largest fraction of capacity over the resources the
// cluster has (DRF's dominant share). A resource the cluster has none of
// counts as exhausted when a asks for it.
func DominantShare(a, capacity Vec) float64 {
	s := 0.0
	for i, x := range a {
		switch {
		case x <= 1e-9:
		case capacity[i] <= 0:
			return math.Inf(1)
		default:
			s = math.Max(s, x/capacity[i])
		}
	}
	return s
}

// Queue is what the fair share of one queue depends on.
type Queue struct {
	Weight    float64 // > 0
	Guarantee Vec
	Limit     Vec // +Inf where unbounded
	// Want is what the queue would hold if nothing held it back: what it
	// holds now plus the demand of its waiting apps and drivers.
	Want Vec
}

// FairShares divides capacity between qs and returns each queue's fair
// share, index for index:
//   - each queue first gets its guarantee, as far as it wants it (scaled
//     down together if the guarantees no longer fit the capacity, after
//     workers were lost);
//   - the rest goes by progressive filling: every queue that wants more is
//     raised along its own demand until its weighted dominant share meets
//     the others'; a queue stops when it has all it wants or reaches its
//     limit, and the queues that need a resource stop when that resource
//     runs out (DRF), the others going on.
//
// A queue never gets more than it wants, nor more than its limit; the
// shares together never pass capacity.
func FairShares(capacity Vec, qs []Queue) []Vec {
	n := len(capacity)
	want := make([]Vec, len(qs))
	got := make([]Vec, len(qs))
	sumG := Zero(n)
	for i, q := range qs {
		want[i] = q.Want.Min(q.Limit).Max(Zero(n))
		got[i] = q.Guarantee.Min(want[i]).Max(Zero(n))
		sumG = sumG.Add(got[i])
	}
	for r := range n {
		if sumG[r] > capacity[r] && sumG[r] > 0 {
			k := capacity[r] / sumG[r]
			for i := range got {
				got[i][r] *= k
			}
		}
	}
	left := capacity.Sub(sumOf(n, got)).Max(Zero(n))
	fill(capacity, qs, want, got, left)
	return got
}

func sumOf(n int, vs []Vec) Vec {
	s := Zero(n)
	for _, v := range vs {
		s = s.Add(v)
	}
	return s
}

// fill raises the queues still wanting more by progressive filling, in
// rounds: each round finds the highest common weighted dominant share the
// remaining capacity allows, then stops the queues that have all they want
// and those that need a resource that ran out.
func fill(capacity Vec, qs []Queue, want, got []Vec, left Vec) {
	n := len(capacity)
	var active []int
	for i := range qs {
		if d := want[i].Sub(got[i]); !d.IsZero() && !needsAbsent(d, capacity) {
			active = append(active, i)
		}
	}
	for len(active) > 0 {
		// extra(i, λ) is what queue i takes at weighted dominant share λ.
		extra := func(i int, lambda float64) Vec {
			d := want[i].Sub(got[i])
			return d.Scale(reach(got[i], d, capacity, lambda*qs[i].Weight))
		}
		total := func(lambda float64) Vec {
			s := Zero(n)
			for _, i := range active {
				s = s.Add(extra(i, lambda))
			}
			return s
		}
		// At top every active queue has all it wants.
		top := 0.0
		for _, i := range active {
			top = math.Max(top, DominantShare(want[i], capacity)/qs[i].Weight)
		}
		// The level the remaining capacity allows; beta of the way to the
		// next one: a queue whose dominant share comes from a resource it
		// wants no more of takes the others up to that share all at once,
		// a jump that the capacity left may cover only in part.
		lo, hi, beta := top, top, 1.0
		if !total(top).Fits(left) {
			lo = 0
			for range 64 {
				mid := (lo + hi) / 2
				if total(mid).Fits(left) {
					lo = mid
				} else {
					hi = mid
				}
			}
			tlo, thi := total(lo), total(hi)
			for r := range n {
				if thi[r] > tlo[r]+1e-12 {
					beta = math.Min(beta, math.Max(0, (left[r]-tlo[r])/(thi[r]-tlo[r])))
				}
			}
		}
		take := func(i int) Vec {
			a, b := extra(i, lo), extra(i, hi)
			return a.Add(b.Sub(a).Scale(beta))
		}
		used := Zero(n)
		for _, i := range active {
			used = used.Add(take(i))
		}
		exhausted := make([]bool, n)
		for r := range n {
			exhausted[r] = left[r]-used[r] <= 1e-6*math.Max(1, capacity[r])
		}
		var next []int
		for _, i := range active {
			got[i] = got[i].Add(take(i))
			if d := want[i].Sub(got[i]); !d.IsZero() && !needsAny(d, exhausted) {
				next = append(next, i)
			}
		}
		left = left.Sub(used).Max(Zero(n))
		if len(next) == len(active) {
			// Nothing ran out and no queue got all it wants: only rounding
			// can do that; stop rather than spin.
			return
		}
		active = next
	}
}

// reach is how far along d, from g, a queue may go (0 to 1) before its
// dominant share passes level.
func reach(g, d, capacity Vec, level float64) float64 {
	alpha := 1.0
	for r := range d {
		if capacity[r] <= 0 {
			continue
		}
		if g[r]/capacity[r] > level+1e-12 {
			return 0
		}
		if d[r] > 1e-12 {
			alpha = math.Min(alpha, (level*capacity[r]-g[r])/d[r])
		}
	}
	return math.Max(alpha, 0)
}

// needsAbsent reports whether d asks for a resource the cluster has none of.
func needsAbsent(d, capacity Vec) bool {
	for r := range d {
		if d[r] > 1e-9 && capacity[r] <= 0 {
			return true
		}
	}
	return false
}

// needsAny reports whether d asks for a resource that ran out.
func needsAny(d Vec, exhausted []bool) bool {
	for r := range d {
		if exhausted[r] && d[r] > 1e-9 {
			return true
		}
	}
	return false
}
