package scheduler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/placement/share"
)

// Preemption (docs/QUEUES.md). A queue below its fair share (its guarantee
// included) whose demand went unplaced for --preemption-delay gets
// capacity back from queues above theirs that allow it; an app waiting
// that long behind apps of a lower priority in its own queue gets theirs.
// placement/share.Plan picks the executors: the fewest that free enough
// room on one worker, most recently started first, never a driver, never
// a queue taken below its fair share, and only where the room freed will
// hold what waits. The master writes each preemption before anything is
// killed (the executor's record says why), so a new leader carries it
// through.

// reclaim runs after the placements: it notes which queues (and apps) are
// owed capacity since when, and preempts for those that waited long
// enough.
func (r *round) reclaim(rnd *shareRound) {
	now := r.now
	names := slices.Sorted(maps.Keys(rnd.queues))
	index, byIndex := map[*queueRound]int{}, make([]*queueRound, len(names))
	for i, n := range names {
		index[rnd.queues[n]], byIndex[i] = i, rnd.queues[n]
	}
	var needs []share.Need
	var due []bool // needs[i] has waited long enough
	owing := map[string]bool{}
	taken := map[string]string{} // worker → the queue executors are taken back there for
	add := func(ns []share.Need, ready bool) {
		for _, n := range ns {
			needs, due = append(needs, n), append(due, ready)
		}
	}
	for _, n := range names {
		qr, o := rnd.queues[n], r.plan.Queues[n]
		owed := qr.placed < qr.wanted && share.DominantShare(qr.usage, rnd.capacity) < share.DominantShare(qr.fair, rnd.capacity)-1e-9
		if !owed {
			o.StarvedSince, o.Reclaiming = time.Time{}, ""
			r.plan.Queues[n] = o
			continue
		}
		owing[n] = true
		if o.StarvedSince.IsZero() {
			o.StarvedSince = now
			r.plan.Queues[n] = o
		}
		if qr.q.Reclaiming > 0 {
			continue // what was taken back for it has yet to end: wait for it
		}
		add(rnd.needsOf(qr, index[qr], r.cfg.MinCoreUnit), now.Sub(o.StarvedSince) >= r.cfg.PreemptionDelay)
	}
	for _, cd := range rnd.cands {
		a := cd.a
		if a.placed > 0 || !a.wants() {
			a.clocks.WaitingSince = time.Time{}
			continue
		}
		if a.clocks.WaitingSince.IsZero() {
			a.clocks.WaitingSince = now
		}
		if !a.preemptible() || !r.lowerPriorityIn(a.Queue, a.Priority) {
			continue
		}
		owing[a.Queue] = true
		if cd.qr.q.Reclaiming == 0 {
			add([]share.Need{rnd.needOf(cd, index[cd.qr], r.cfg.MinCoreUnit)}, now.Sub(a.clocks.WaitingSince) >= r.cfg.PreemptionDelay)
		}
	}
	needs, due = r.possibleNeeds(rnd, needs, due)
	r.plan.Owing = len(needs) > 0
	if len(needs) == 0 {
		r.keepHolds(owing, nil)
		r.describeReclaims(rnd, names, nil)
		return
	}
	cluster, victims := r.preemptionView(rnd, byIndex, needs)
	freed := map[string]map[string]share.Vec{} // owed queue → queue taken from → what
	for _, v := range share.Plan(cluster, needs) {
		e, n := victims[v.Executor], needs[v.Need]
		owed, from := names[n.Queue], e.app.Queue
		if freed[owed] == nil {
			freed[owed] = map[string]share.Vec{}
		}
		if f, ok := freed[owed][from]; ok {
			freed[owed][from] = f.Add(cluster.Use(v.Executor))
		} else {
			freed[owed][from] = slices.Clone(cluster.Use(v.Executor))
		}
		if !due[v.Need] {
			continue
		}
		why := "for queue " + owed
		if from == owed {
			why = fmt.Sprintf("for an app of priority %d in queue %s", n.Priority, owed)
		}
		r.plan.Preemptions = append(r.plan.Preemptions, Preemption{AppID: e.app.ID, ExecutorID: e.id, Why: why, For: owed})
		taken[e.worker] = owed
	}
	clear(victims) // its storage is kept for the next round, the apps need not be
	r.keepHolds(owing, taken)
	r.describeReclaims(rnd, names, freed)
}

// describeReclaims says, of every queue owed capacity, what is (or will
// be) taken back for it.
func (r *round) describeReclaims(rnd *shareRound, names []string, freed map[string]map[string]share.Vec) {
	for _, n := range names {
		o := r.plan.Queues[n]
		if o.StarvedSince.IsZero() {
			continue
		}
		wait := time.Duration(0)
		if freed != nil {
			wait = r.cfg.PreemptionDelay - r.now.Sub(o.StarvedSince)
		}
		switch qr, held := rnd.queues[n], r.holdsFor(n); {
		case qr.q.Reclaiming > 0:
			o.Reclaiming = fmt.Sprintf("%d executors taken back for it are ending (within --preemption-grace %s)", qr.q.Reclaiming, r.cfg.PreemptionGrace)
		case len(freed[n]) == 0 && held != "":
			o.Reclaiming = "the room taken back for it on worker " + held + " is held for it"
		default:
			o.Reclaiming = describeReclaim(rnd, freed[n], wait)
		}
		r.plan.Queues[n] = o
	}
}

// describeReclaim says what is (or will be, in wait) taken back for a
// queue: "8 cores to be reclaimed from queue batch in 25s".
func describeReclaim(rnd *shareRound, from map[string]share.Vec, wait time.Duration) string {
	if len(from) == 0 {
		// No executor the plan may take (of a queue that allows it, kept
		// at its fair share, or for a guarantee at its own guarantee)
		// frees room on one worker for what waits.
		return "owed capacity, but no executor can be taken back to make room for it: the queues above their fair share (above their guarantees, for a queue below its own) have none whose room would hold it"
	}
	var parts []string
	for _, q := range slices.Sorted(maps.Keys(from)) {
		parts = append(parts, fmt.Sprintf("%s from queue %s", DescribeAmount(rnd.amount(from[q])), q))
	}
	if wait > 0 {
		return strings.Join(parts, "; ") + " to be reclaimed in " + wait.Round(time.Second).String()
	}
	return "reclaiming " + strings.Join(parts, "; ")
}

// needsOf is what queue qr (index i) is owed room for: its apps' unplaced
// executors, by priority then age.
func (rnd *shareRound) needsOf(qr *queueRound, i, unit int) []share.Need {
	var out []share.Need
	guaranteed := share.DominantShare(qr.usage, rnd.capacity) < share.DominantShare(rnd.guaranteeOf(qr), rnd.capacity)-1e-9
	for _, cd := range rnd.cands {
		if cd.qr == qr && cd.a.placed < cd.need && cd.a.preemptible() {
			n := rnd.needOf(cd, i, unit)
			n.Guaranteed = guaranteed
			out = append(out, n)
		}
	}
	return out
}

// needOf is app cd's unplaced executors as a need of queue i: an executor
// of its size, or (a size left to placement) of its step, at least one
// core (an app granted all its cores in this round may still count
// executors unplaced).
func (rnd *shareRound) needOf(cd candidate, i, unit int) share.Need {
	one := slices.Clone(cd.one)
	if cd.a.Cores == 0 {
		one[0] = float64(max(cd.a.step(unit), 1))
	}
	return share.Need{Queue: i, Priority: cd.a.Priority, Shape: one, Count: max(cd.need-cd.a.placed, 0)}
}

// lowerPriorityIn reports whether queue name has an executor of an app of
// a lower priority than p.
func (r *round) lowerPriorityIn(name string, p int) bool {
	for _, a := range r.apps {
		if a.Queue == name && a.Priority < p && a.held > 0 {
			return true
		}
	}
	return false
}

// possibleNeeds keeps the needs preemption could ever serve: an executor
// no worker could hold even empty waits for a larger worker, not for a
// kill; and with no executor running that could be taken at all (none in
// a queue that allows preemption), there is nothing to plan. Either way
// the view of every worker is not built: at 100,000 workers it is tens
// of milliseconds, and an owed queue asks for a round every tick.
func (r *round) possibleNeeds(rnd *shareRound, needs []share.Need, due []bool) ([]share.Need, []bool) {
	if len(needs) == 0 {
		return nil, nil // nobody owed: the room need not be known (one pass over the fleet)
	}
	takeable := false
	for _, qr := range rnd.queues {
		if qr.q.Preempt && qr.usage[0] > 0 {
			takeable = true
			break
		}
	}
	if !takeable {
		return nil, nil
	}
	room := r.v.Rooms.Of(r.v.Fleet, nil)
	keptNeeds, keptDue := needs[:0], due[:0]
	for i, n := range needs {
		if room.sizes.holds(int(math.Ceil(n.Shape[0])), int(math.Ceil(n.Shape[1]))) { // some worker could hold it, emptied
			keptNeeds, keptDue = append(keptNeeds, n), append(keptDue, due[i])
		}
	}
	return keptNeeds, keptDue
}

// preemptible reports whether preemption may make room for a's executors.
// Not for an app with constraints: the plan does not know which workers
// satisfy them, and an executor killed on a worker the app may not use
// frees nothing it can use. Nor for a gang still to be placed: the plan
// makes room one executor at a time, and room for part of a gang is
// room wasted (a gang waits, then holds capacity as it frees: gang.go).
// docs/QUEUES.md says so.
func (a *app) preemptible() bool { return len(a.Constraints) == 0 && !a.gangForming() }
