package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/share"
	"github.com/berth-cluster/berth/wire"
)

// The fair-share round. Each scheduling round works out, over the
// placeable workers' capacity, what every queue holds, wants and is owed
// (placement/share: weighted DRF, guarantees first, limits), then places
// in two passes over the same index:
//  1. the queues below their guarantee first, then by weighted dominant
//     share, lowest first; within a queue by priority, then first come
//     first served; each app capped at what its queue is owed;
//  2. what is still free (capacity the owed could not use: a GPU app's
//     cores, fragments) to whoever still wants it, up to the queues'
//     limits: capacity never idles while an app that fits it waits.

// shareRound is one round's view of the queues.
type shareRound struct {
	dims     []string // cores, memory, then each resource offered
	capacity share.Vec
	queues   map[string]*queueRound
	// cands are the apps that wanted executors, in pass 1's order.
	cands  []candidate
	shared bool // fairShares has run
}

// queueRound is one queue in a round.
type queueRound struct {
	q                 *Queue
	usage, want, fair share.Vec
	leaving           share.Vec // held by its executors being taken back (in usage still)
	limit             share.Vec
	left              share.Vec // what pass 1 may still give it
	wanted, placed    int       // executors its apps asked for, and got, this round
	// capped: pass 1 gave an app of it fewer executors than it could
	// start, its queue being owed no more.
	capped bool
}

// newShareRound takes the capacity and what every queue holds.
func (r *round) newShareRound() *shareRound {
	k := r.v.Capacity
	rnd := &shareRound{dims: append([]string{"cores", "memory"}, slices.Sorted(maps.Keys(k.Resources))...), queues: map[string]*queueRound{}}
	rnd.capacity = rnd.vec(k.Cores, k.MemoryMB, k.Resources, 1)
	n := len(rnd.dims)
	for name, q := range r.queues {
		qr := &queueRound{q: q, usage: share.Zero(n), leaving: share.Zero(n), limit: share.Unbounded(n)}
		if l := q.Limit; l != nil {
			qr.limit = rnd.amountVec(*l, math.Inf(1))
		}
		rnd.queues[name] = qr
	}
	for _, a := range r.apps {
		if qr := rnd.queues[a.Queue]; qr != nil {
			qr.usage = qr.usage.Add(rnd.vec(a.granted, a.held*a.MemoryMB, a.Resources, a.held))
			if a.LeavingExecs > 0 {
				qr.leaving = qr.leaving.Add(rnd.vec(a.LeavingCores, a.LeavingExecs*a.MemoryMB, a.Resources, a.LeavingExecs))
			}
		}
	}
	for _, d := range r.v.Drivers {
		if qr := rnd.queues[d.Queue]; qr != nil {
			qr.usage = qr.usage.Add(rnd.vec(d.Cores, d.MemoryMB, d.Resources, 1))
		}
	}
	for _, qr := range rnd.queues {
		qr.want = slices.Clone(qr.usage)
	}
	// Waiting drivers are their queues' demand too.
	for _, d := range r.v.WaitingDrivers {
		if qr := rnd.queues[d.Queue]; qr != nil {
			qr.want = qr.want.Add(rnd.vec(d.Cores, d.MemoryMB, d.Resources, 1))
		}
	}
	return rnd
}

// vec is cores, memory and count times res (thousandths) as a Vec of the
// round's dimensions; a resource the workers do not offer is left out.
func (rnd *shareRound) vec(cores, memory int, res map[string]int, count int) share.Vec {
	v := share.Zero(len(rnd.dims))
	v[0], v[1] = float64(cores), float64(memory)
	for i, r := range rnd.dims[2:] {
		v[2+i] = float64(res[r] * count)
	}
	return v
}

// amountVec is an amount as a Vec; a field left out (0) is unset.
func (rnd *shareRound) amountVec(a wire.Amount, unset float64) share.Vec {
	v := share.Zero(len(rnd.dims))
	for i := range v {
		v[i] = unset
	}
	if a.Cores > 0 {
		v[0] = float64(a.Cores)
	}
	if a.MemoryMB > 0 {
		v[1] = float64(a.MemoryMB)
	}
	for i, r := range rnd.dims[2:] {
		if x, ok := a.Resources[r]; ok {
			v[2+i] = x * placement.Whole
		}
	}
	return v
}

// guaranteeOf is qr's guarantee as a Vec. What it leaves out is filled in
// the shape of the queue's demand: "cores=6" guarantees six cores of what
// the queue runs, with the memory (and resources) those take, not six
// cores with no memory to run them (which no executor could use, so that
// what was reclaimed for the queue went back to others, round after
// round).
func (rnd *shareRound) guaranteeOf(qr *queueRound) share.Vec {
	g := rnd.amountVec(qr.q.Guarantee, -1)
	ratio, named := math.Inf(1), false
	for d, x := range g {
		if x < 0 {
			continue
		}
		named = true
		if qr.want[d] > 0 {
			ratio = min(ratio, x/qr.want[d])
		}
	}
	if !named {
		return share.Zero(len(g))
	}
	if math.IsInf(ratio, 1) {
		ratio = 0 // it wants none of what the guarantee names
	}
	for d, x := range g {
		if x < 0 {
			g[d] = qr.want[d] * min(ratio, 1)
		}
	}
	return g
}

// shape is what one executor of a takes, and its cores (of an app of no
// fixed size: all it may still get of coresFree).
func (rnd *shareRound) shape(a *app, coresFree int) (one share.Vec, cores int) {
	cores = a.Cores
	if cores == 0 {
		cores = min(a.coresLeft(), coresFree)
	}
	return rnd.vec(cores, a.MemoryMB, a.Resources, 1), cores
}

// fairShares computes every queue's fair share from what it holds and
// wants.
func (rnd *shareRound) fairShares() {
	rnd.shared = true
	names := slices.Sorted(maps.Keys(rnd.queues))
	qs := make([]share.Queue, len(names))
	for i, name := range names {
		qr := rnd.queues[name]
		qs[i] = share.Queue{Weight: qr.q.Weight, Guarantee: rnd.guaranteeOf(qr), Limit: qr.limit, Want: qr.want}
	}
	for i, f := range share.FairShares(rnd.capacity, qs) {
		qr := rnd.queues[names[i]]
		qr.fair = f
		qr.left = f.Sub(qr.usage).Max(share.Zero(len(f)))
	}
}

// order is the queues in the order pass 1 serves them: those below their
// guarantee first, then by weighted dominant share, lowest first (name
// breaks ties).
func (rnd *shareRound) order() []*queueRound {
	type keyed struct {
		qr    *queueRound
		below int
		ds    float64
	}
	keys := make([]keyed, 0, len(rnd.queues))
	for _, qr := range rnd.queues {
		ds := share.DominantShare(qr.usage, rnd.capacity)
		below := 1
		if ds < share.DominantShare(rnd.guaranteeOf(qr).Min(qr.want), rnd.capacity)-1e-9 {
			below = 0
		}
		keys = append(keys, keyed{qr, below, ds / qr.q.Weight})
	}
	slices.SortFunc(keys, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.below, b.below), cmp.Compare(a.ds, b.ds), cmp.Compare(a.qr.q.Name, b.qr.q.Name))
	})
	out := make([]*queueRound, len(keys))
	for i, k := range keys {
		out[i] = k.qr
	}
	return out
}

// allowed is how many executors of shape one a queue with left to give
// may start: up to what it is owed, rounded up by one executor (an
// executor is not cut in pieces), none once it is owed nothing.
func allowed(left, one share.Vec) int {
	k := math.Inf(1)
	for i := range one {
		if one[i] > 0 {
			k = math.Min(k, left[i]/one[i])
		}
	}
	if k <= 1e-9 {
		return 0
	}
	if math.IsInf(k, 1) {
		return math.MaxInt32
	}
	return int(math.Ceil(k - 1e-6)) // the shares are sums of floats: 7.0000001 is 7
}

// amount renders a Vec of the round as an amount.
func (rnd *shareRound) amount(v share.Vec) wire.Amount {
	a := wire.Amount{Cores: int(math.Round(v[0])), MemoryMB: int(math.Round(v[1]))}
	for i, r := range rnd.dims[2:] {
		if x := v[2+i]; x > 0 && !math.IsInf(x, 1) {
			if a.Resources == nil {
				a.Resources = wire.ResourceAmounts{}
			}
			a.Resources[r] = math.Round(x) / placement.Whole
		}
	}
	return a
}

// record puts in the plan what the round found of each queue, for its
// status and for why its apps wait; the reclaiming and the starvation
// clock are the last round's until reclaim decides them.
func (r *round) record(rnd *shareRound) {
	if !rnd.shared {
		rnd.fairShares()
	}
	r.plan.Queues = make(map[string]QueueOutcome, len(rnd.queues))
	for name, qr := range rnd.queues {
		o := QueueOutcome{Usage: rnd.amount(qr.usage), Fair: rnd.amount(qr.fair),
			Waiting:       rnd.amount(qr.want.Sub(qr.usage).Max(share.Zero(len(qr.usage)))),
			DominantShare: share.DominantShare(qr.usage, rnd.capacity), FairDominantShare: share.DominantShare(qr.fair, rnd.capacity),
			Reclaiming: qr.q.Last.Reclaiming, StarvedSince: qr.q.StarvedSince}
		switch {
		case qr.placed >= qr.wanted:
		case atLimit(qr):
			o.Held = fmt.Sprintf("queue %s at its limit (%s)", qr.q.Name, DescribeAmount(*qr.q.Limit))
		case r.holdsAgainst(name):
			o.Held = heldReason(r.holds, name)
		case qr.capped && rnd.othersOwed(qr):
			o.Held = fmt.Sprintf("queue %s holds its fair share (%s) while others are owed theirs", qr.q.Name, DescribeAmount(o.Fair))
		}
		r.plan.Queues[name] = o
	}
}

// atLimit reports whether a queue with a limit cannot grow in one of the
// resources it wants more of.
func atLimit(qr *queueRound) bool {
	if qr.q.Limit == nil {
		return false
	}
	for i := range qr.usage {
		if qr.want[i] > qr.usage[i]+1e-9 && qr.usage[i] >= qr.limit[i]-1e-9 {
			return true
		}
	}
	return false
}

// othersOwed reports whether a queue other than qr is below its fair
// share with demand left.
func (rnd *shareRound) othersOwed(qr *queueRound) bool {
	for _, o := range rnd.queues {
		if o != qr && o.placed < o.wanted && share.DominantShare(o.usage, rnd.capacity) < share.DominantShare(o.fair, rnd.capacity)-1e-9 {
			return true
		}
	}
	return false
}
