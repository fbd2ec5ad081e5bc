package master

import (
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// Bad workers avoided (docs/HEALTH.md). The rules (the window, how many
// failures exclude a worker for an app, how many make it unhealthy) are
// scheduler's (scheduler/failures.go); the master records each worker's
// failures, asks the rules at each one and at each tick, and keeps what
// they answer for the next view (App.Excluded, Worker.Unhealthy). Both are
// the leader's memory, as the relaunch backoff: a new leader starts
// without them (a failover is rare, and what fails fails again).

// failureLog is every worker's failures that still count, oldest first.
type failureLog map[string][]scheduler.Failure

// add records a failure on worker and drops those that no longer count.
func (f failureLog) add(worker, owner string, byWorker bool, now time.Time) {
	f[worker] = append(f.recent(worker, now), scheduler.Failure{At: now, Owner: owner, ByWorker: byWorker})
}

// recent is worker's failures that still count at now; it forgets the
// others (and the worker, once none is left).
func (f failureLog) recent(worker string, now time.Time) []scheduler.Failure {
	list := slices.DeleteFunc(f[worker], func(x scheduler.Failure) bool { return !x.Counts(now) })
	if len(list) == 0 {
		delete(f, worker)
	}
	return list
}

// noteFailure records that a process of owner failed on w, for cause: it
// may exclude w for the app (a), and, if the worker failed it, make w
// unhealthy.
func (c *core) noteFailure(w *workerInfo, owner string, a *appInfo, why string, cause wire.FailureCause) {
	now := c.now()
	c.failures.add(w.rec.ID, owner, cause == wire.CauseWorker, now)
	if a != nil {
		if x, ok := scheduler.ExclusionFor(c.failures[w.rec.ID], owner, why, now, c.cfg.ExcludeDuration); ok {
			if a.excluded == nil {
				a.excluded = map[string]scheduler.Exclusion{}
			}
			a.excluded[w.rec.ID] = x
			c.log.Warn("worker excluded for an app", "worker", w.rec.ID, "app", a.rec.ID, "until", x.Until, "reason", x.Reason)
			c.metrics.exclusions.Inc()
			c.schedule()
		}
	}
	c.judgeWorker(w, now)
}

// judgeWorker marks w unhealthy while its failures say so
// (scheduler.Unhealthy), and healthy again once they no longer do.
func (c *core) judgeWorker(w *workerInfo, now time.Time) {
	why := scheduler.Unhealthy(c.failures.recent(w.rec.ID, now), now)
	switch {
	case why != "" && w.unhealthy == "":
		w.unhealthy = why
		w.unhealthySince = now
		c.log.Warn("worker unhealthy: nothing new is placed on it", "worker", w.rec.ID, "why", w.unhealthy)
		c.touched(w)
	case why == "" && w.unhealthy != "":
		c.log.Info("worker healthy again", "worker", w.rec.ID)
		w.unhealthy, w.unhealthySince = "", time.Time{}
		c.touched(w)
		c.schedule()
	}
}

// expireExclusions (from tick) ends exclusions whose time is over and
// judges the workers again as their failures age.
func (c *core) expireExclusions() {
	now := c.now()
	for _, a := range c.appOrder {
		for id, x := range a.excluded {
			if x.Over(now) {
				delete(a.excluded, id)
				c.schedule()
			}
		}
	}
	// Only workers with failures can be (or stop being) unhealthy: a walk
	// of every worker here cost 2 ms a tick at 100,000 workers.
	for id := range c.failures {
		if w := c.workers[id]; w != nil {
			c.judgeWorker(w, now)
		} else {
			c.failures.recent(id, now)
		}
	}
}

// clearWorker (berth worker clear) forgets w's failures: it is healthy,
// and no app is excluded from it.
func (c *core) clearWorker(id string) (wire.WorkerStatus, error) {
	if !c.leading() {
		return wire.WorkerStatus{}, c.notLeader()
	}
	w, ok := c.workers[id]
	if !ok {
		return wire.WorkerStatus{}, notFound("worker", id)
	}
	delete(c.failures, id)
	for _, a := range c.appOrder {
		delete(a.excluded, id)
	}
	if w.unhealthy != "" {
		w.unhealthy, w.unhealthySince = "", time.Time{}
		c.touched(w)
	}
	c.log.Info("worker cleared by an operator", "worker", id)
	c.auditAlone(c.req) // leader memory only: no write carries the request's entry
	c.schedule()
	return workerStatus(w), nil
}

// exclusionList is a's exclusions, for its status.
func (a *appInfo) exclusionList() []wire.Exclusion {
	if len(a.excluded) == 0 {
		return nil
	}
	out := make([]wire.Exclusion, 0, len(a.excluded))
	for id, x := range a.excluded {
		out = append(out, wire.Exclusion{WorkerID: id, Until: x.Until, Reason: x.Reason})
	}
	slices.SortFunc(out, func(x, y wire.Exclusion) int { return strings.Compare(x.WorkerID, y.WorkerID) })
	return out
}
