package master

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/share"
	"github.com/berth-cluster/berth/wire"
)

// Preemption (docs/QUEUES.md). A queue below its fair share (its guarantee
// included) whose demand went unplaced for --preemption-delay gets
// capacity back from queues above theirs that allow it; an app waiting
// that long behind apps of a lower priority in its own queue gets theirs.
// placement/share.Plan picks the executors: the fewest that free enough
// room on one worker, most recently started first, never a driver, never
// a queue taken below its fair share, and only where the room freed will
// hold what waits. A preemption is written before anything is killed
// (the executor's record says why), so a new leader carries it through:
// it kills what the old one had marked, once, and nothing else.

// reclaim runs after each round: it notes which queues (and apps) are
// owed capacity since when, and preempts for those that waited long
// enough.
func (c *core) reclaim(rnd *shareRound) {
	c.resendPreemptions()
	now := c.now()
	names := slices.Sorted(maps.Keys(rnd.queues))
	index, byIndex := map[*queueRound]int{}, make([]*queueRound, len(names))
	for i, n := range names {
		index[rnd.queues[n]], byIndex[i] = i, rnd.queues[n]
	}
	var needs []share.Need
	var due []bool // needs[i] has waited long enough
	add := func(ns []share.Need, ready bool) {
		for _, n := range ns {
			needs, due = append(needs, n), append(due, ready)
		}
	}
	for _, n := range names {
		qr := rnd.queues[n]
		q := qr.q
		owed := qr.placed < qr.wanted && share.DominantShare(qr.usage, rnd.capacity) < share.DominantShare(qr.fair, rnd.capacity)-1e-9
		if !owed {
			q.starvedSince, q.view.reclaiming = time.Time{}, ""
			continue
		}
		if q.starvedSince.IsZero() {
			q.starvedSince = now
		}
		if c.reclaiming[n] > 0 {
			continue // what was taken back for it has yet to end: wait for it
		}
		add(rnd.needsOf(qr, index[qr], c.cfg.MinCoreUnit), now.Sub(q.starvedSince) >= c.cfg.PreemptionDelay)
	}
	for _, cd := range rnd.cands {
		a := cd.a
		if rnd.placed[a] > 0 || !wantsCores(a) {
			a.waitingSince = time.Time{}
			continue
		}
		if a.waitingSince.IsZero() {
			a.waitingSince = now
		}
		if c.reclaiming[cd.qr.q.rec.Name] == 0 && preemptible(a) && c.lowerPriorityIn(cd.qr.q.rec.Name, a.rec.Desc.Priority) {
			add([]share.Need{rnd.needOf(cd, index[cd.qr], c.cfg.MinCoreUnit)}, now.Sub(a.waitingSince) >= c.cfg.PreemptionDelay)
		}
	}
	needs, due = c.possibleNeeds(rnd, needs, due)
	c.owing = len(needs) > 0
	if len(needs) == 0 {
		for _, n := range names {
			if q := rnd.queues[n].q; !q.starvedSince.IsZero() {
				q.view.reclaiming = describeReclaim(rnd, nil, 0)
			}
		}
		return
	}
	cluster, running := c.preemptionView(rnd, byIndex, needs)
	freed := map[string]map[string]share.Vec{} // owed queue → queue taken from → what
	for _, v := range share.Plan(cluster, needs) {
		e, n := running[v.Executor], needs[v.Need]
		owed, from := names[n.Queue], queueName(e.app.rec.Desc.Queue)
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
		c.preempt(e, why, owed)
	}
	clear(running) // its storage is kept for the next round, the executors need not be
	for _, n := range names {
		q := rnd.queues[n].q
		if q.starvedSince.IsZero() {
			continue
		}
		q.view.reclaiming = describeReclaim(rnd, freed[n], c.cfg.PreemptionDelay-now.Sub(q.starvedSince))
	}
}

// describeReclaim says what is (or will be, in wait) taken back for a
// queue: "8 cores to be reclaimed from queue batch in 25s".
func describeReclaim(rnd *shareRound, from map[string]share.Vec, wait time.Duration) string {
	if len(from) == 0 {
		return "owed capacity, but no queue above its fair share has any to give back"
	}
	var parts []string
	for _, q := range slices.Sorted(maps.Keys(from)) {
		parts = append(parts, fmt.Sprintf("%s from queue %s", describeAmount(rnd.amount(from[q])), q))
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
		if cd.qr == qr && rnd.placed[cd.a] < cd.need && preemptible(cd.a) {
			n := rnd.needOf(cd, i, unit)
			n.Guaranteed = guaranteed
			out = append(out, n)
		}
	}
	return out
}

// needOf is app cd's unplaced executors as a need of queue i: an executor
// of its size, or (a size left to placement) of the core unit.
func (rnd *shareRound) needOf(cd candidate, i, unit int) share.Need {
	one := slices.Clone(cd.one)
	if cd.a.rec.Desc.CoresPerExecutor == 0 {
		one[0] = float64(min(placement.CoreUnit(unit), max(cd.a.coresLeft(), 1)))
	}
	return share.Need{Queue: i, Priority: cd.a.rec.Desc.Priority, Shape: one, Count: max(cd.need-rnd.placed[cd.a], 0)}
}

// lowerPriorityIn reports whether queue name has a running executor of an
// app of a lower priority than p.
func (c *core) lowerPriorityIn(name string, p int) bool {
	for _, a := range c.appOrder {
		if queueName(a.rec.Desc.Queue) == name && a.rec.Desc.Priority < p && len(a.executors) > 0 {
			return true
		}
	}
	return false
}

// preempt writes that e is taken back (why), then kills it with the
// preemption grace and tells its app.
func (c *core) preempt(e *executorInfo, why, owed string) {
	a := e.app
	c.markReclaimed(e, why, owed) // taken: a later round does not pick it again
	c.commit([]persistence.Command{persistence.PutExecutor(e.record())}, func() {
		if !c.live(e) {
			return
		}
		if q := c.queueOf(a.rec.Desc.Queue); q != nil {
			q.preemptions++
		}
		c.metrics.preemptions.WithLabelValues(queueName(a.rec.Desc.Queue)).Inc()
		c.log.Info("preempting an executor", "app", a.rec.ID, "executor", e.id, "why", why)
		c.sendPreemption(e)
		c.publish(a, wire.AppEvent{Type: wire.EventExecutorPreempted, Executor: executorStatus(e), Message: "preempted " + why})
	}, func(err error) {
		if err != nil && e.reclaimedFor != "" {
			c.unmarkReclaimed(e) // not durable: free to be picked again
		}
	})
}

// markReclaimed notes that e is being taken back for queue owed (why):
// the queue waits for it before taking more, and e's own queue counts it
// as leaving (preemptionView offers no more of that queue than it holds
// above its fair share without it).
func (c *core) markReclaimed(e *executorInfo, why, owed string) {
	e.preemptedFor, e.reclaimedFor = why, owed
	if owed != "" {
		c.reclaiming[owed]++
	}
	e.app.leaving(e, 1)
}

// unmarkReclaimed undoes markReclaimed (the mark was not written, or e
// ended).
func (c *core) unmarkReclaimed(e *executorInfo) {
	if e.reclaimedFor != "" {
		c.reclaiming[e.reclaimedFor]--
	}
	if e.preemptedFor != "" {
		e.app.leaving(e, -1)
	}
	e.preemptedFor, e.reclaimedFor = "", ""
}

// sendPreemption tells e's worker to kill it, once per leadership.
func (c *core) sendPreemption(e *executorInfo) {
	e.killSent = true
	grace := c.cfg.PreemptionGrace.Milliseconds()
	c.fx.send(e.worker, commandOn(wire.WorkerAPI.KillExecutor, wire.KillExecutor{Epoch: c.epoch, AppID: e.app.rec.ID, ExecutorID: e.id, GraceMs: max(grace, 1)}))
}

// resendPreemptions carries through the preemptions a former leader made
// durable: their executors are killed by this one too, once their worker
// has confirmed them.
func (c *core) resendPreemptions() {
	for e := range c.inheritedPreemptions {
		switch {
		case !c.live(e):
			delete(c.inheritedPreemptions, e)
		case e.state == wire.ExecutorRunning:
			delete(c.inheritedPreemptions, e)
			c.sendPreemption(e)
		}
	}
}

// settleQueues runs when nothing waits: no queue is owed anything.
func (c *core) settleQueues() {
	c.resendPreemptions()
	c.owing = false
	for _, q := range c.queues {
		q.starvedSince = time.Time{}
	}
	c.newShareRound().record() // what each queue holds now, for its status
	for _, q := range c.queues {
		q.view.reclaiming, q.view.held = "", ""
	}
}

// possibleNeeds keeps the needs preemption could ever serve: an executor
// no worker could hold even empty waits for a larger worker, not for a
// kill; and with no executor running that could be taken at all (none in
// a queue that allows preemption), there is nothing to plan. Either way
// the view of every worker is not built: at 100,000 workers it is tens
// of milliseconds, and an owed queue asks for a round every tick.
func (c *core) possibleNeeds(rnd *shareRound, needs []share.Need, due []bool) ([]share.Need, []bool) {
	takeable := false
	for _, qr := range rnd.queues {
		if qr.q.rec.Preempt && qr.usage[0] > 0 {
			takeable = true
			break
		}
	}
	if !takeable {
		return nil, nil
	}
	r := c.room()
	keptNeeds, keptDue := needs[:0], due[:0]
	for i, n := range needs {
		if r.sizes.holds(int(math.Ceil(n.Shape[0])), int(math.Ceil(n.Shape[1]))) { // some worker could hold it, emptied
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
func preemptible(a *appInfo) bool { return len(a.rec.Desc.Constraints) == 0 && !a.gangForming() }
