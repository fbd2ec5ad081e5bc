package master

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// Bad workers avoided (docs/HEALTH.md; Spark's excludeOnFailure). A
// process of an app that fails on one worker twice within failureWindow,
// whatever the cause, keeps that app's executors off the worker for
// --exclude-duration: an app's own failures keep it, and only it, off. A
// worker where the worker itself failed processes of unhealthyApps apps
// (or drivers) within the window (wire.CauseWorker: it could not prepare
// or start them) takes nothing new, for anyone, until that passes or an
// operator clears it. A process's own exit, its checks, its memory or a
// port another process held are never counted against the worker: one
// tenant's failing apps benched a worker for every tenant. Both are the
// leader's memory, as the relaunch backoff: a new leader starts without
// them (a failover is rare, and what fails fails again).

const (
	failureWindow   = 10 * time.Minute
	failuresExclude = 2 // of one app on one worker
	unhealthyApps   = 3 // apps or drivers failing on one worker
)

// failure is a process of owner (an app's or a driver's id) that failed;
// byWorker: the worker's own failure (wire.CauseWorker).
type failure struct {
	at       time.Time
	owner    string
	byWorker bool
}

// failureLog is every worker's failures within the window.
type failureLog map[string][]failure

// add records a failure on worker and drops those out of the window.
func (f failureLog) add(worker, owner string, byWorker bool, now time.Time) {
	f[worker] = append(f.recent(worker, now), failure{at: now, owner: owner, byWorker: byWorker})
}

// recent is worker's failures within the window.
func (f failureLog) recent(worker string, now time.Time) []failure {
	list := slices.DeleteFunc(f[worker], func(x failure) bool { return now.Sub(x.at) >= failureWindow })
	if len(list) == 0 {
		delete(f, worker)
	}
	return list
}

// of counts owner's failures on worker within the window.
func (f failureLog) of(worker, owner string, now time.Time) int {
	n := 0
	for _, x := range f.recent(worker, now) {
		if x.owner == owner {
			n++
		}
	}
	return n
}

// owners lists, sorted, whose processes the worker itself failed within
// the window.
func (f failureLog) owners(worker string, now time.Time) []string {
	var out []string
	for _, x := range f.recent(worker, now) {
		if x.byWorker && !slices.Contains(out, x.owner) {
			out = append(out, x.owner)
		}
	}
	sort.Strings(out)
	return out
}

// noteFailure records that a process of owner failed on w, for cause: it
// may exclude w for the app (a), and, if the worker failed it, make w
// unhealthy.
func (c *core) noteFailure(w *workerInfo, owner string, a *appInfo, why string, cause wire.FailureCause) {
	now := c.now()
	c.failures.add(w.rec.ID, owner, cause == wire.CauseWorker, now)
	if a != nil && c.failures.of(w.rec.ID, owner, now) >= failuresExclude {
		if a.excluded == nil {
			a.excluded = map[string]scheduler.Exclusion{}
		}
		reason := fmt.Sprintf("%d executors failed there within %s (last: %s)", c.failures.of(w.rec.ID, owner, now), failureWindow, why)
		a.excluded[w.rec.ID] = scheduler.Exclusion{Until: now.Add(c.cfg.ExcludeDuration), Reason: reason}
		c.log.Warn("worker excluded for an app", "worker", w.rec.ID, "app", a.rec.ID, "until", a.excluded[w.rec.ID].Until, "reason", reason)
		c.metrics.exclusions.Inc()
		c.schedule()
	}
	c.judgeWorker(w, now)
}

// judgeWorker marks w unhealthy while unhealthyApps owners failed there
// within the window, and healthy again once fewer did.
func (c *core) judgeWorker(w *workerInfo, now time.Time) {
	owners := c.failures.owners(w.rec.ID, now)
	switch {
	case len(owners) >= unhealthyApps && w.unhealthy == "":
		w.unhealthy = fmt.Sprintf("the worker could not start processes of %d apps or drivers within %s (%s)", len(owners), failureWindow, strings.Join(owners, ", "))
		w.unhealthySince = now
		c.log.Warn("worker unhealthy: nothing new is placed on it", "worker", w.rec.ID, "why", w.unhealthy)
		c.touched(w)
	case len(owners) < unhealthyApps && w.unhealthy != "":
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
			if !now.Before(x.Until) {
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
