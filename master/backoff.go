package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// Relaunch backoff. An app whose executors keep ending within seconds of
// starting, whatever their exit code (an executor that exits 0 at once was
// relaunched ~350 times a second, 7,139 work directories in 20 s), gets
// its next executors only after a delay that doubles with each such end,
// from relaunchBackoffMin up to relaunchBackoffMax. An executor that runs
// for executorStableAfter clears it. Ends within one delay count once:
// ten executors that fail together are one failure of the app, not ten.
// The backoff is the leader's: a new leader starts without one.
const (
	relaunchBackoffMin = 500 * time.Millisecond
	relaunchBackoffMax = time.Minute
)

// relaunchBackoff is the delay after the n-th fast end in a row (n >= 1).
func relaunchBackoff(n int) time.Duration {
	d := relaunchBackoffMin
	for i := 1; i < n && d < relaunchBackoffMax; i++ {
		d *= 2
	}
	return min(d, relaunchBackoffMax)
}

// endedFast reports whether e ended soon after it started: it was never
// RUNNING, or not for executorStableAfter.
func (c *core) endedFast(e *executorInfo) bool {
	return e.runningSince.IsZero() || c.now().Sub(e.runningSince) < executorStableAfter
}

// noteExecutorEnd applies e's end to its app's backoff: an exit or failure
// soon after starting starts or doubles it (and tells the app's client),
// one that ran stably clears it. Kills and losses are not the app's doing
// and leave it as it is; so does a signal no part of berth sent (a
// person's kill -9 of an executor just started is no reason to delay its
// replacement). A failure of the worker's own counts: a worker that fails
// every launch at once would otherwise be retried as fast as its
// placements commit.
func (c *core) noteExecutorEnd(e *executorInfo) {
	a := e.app
	if e.state != wire.ExecutorExited && e.state != wire.ExecutorFailed || e.cause == wire.CauseSignal {
		return
	}
	if !c.endedFast(e) {
		a.fastEnds, a.backoffUntil = 0, time.Time{}
		return
	}
	now := c.now()
	if now.Before(a.backoffUntil) {
		return // this delay already counts the failure
	}
	a.fastEnds++
	delay := relaunchBackoff(a.fastEnds)
	a.backoffUntil = now.Add(delay)
	msg := fmt.Sprintf("executor %d ended soon after it started (%d in a row): new executors wait %s", e.id, a.fastEnds, delay)
	c.log.Info("relaunch backoff", "app", a.rec.ID, "executor", e.id, "fastEnds", a.fastEnds, "delay", delay)
	c.publish(a, wire.AppEvent{Type: wire.EventRelaunchDelayed, Message: msg})
}

// endBackoffs schedules the apps whose backoff is over (from tick), and
// clears the backoff of apps whose executors have proved they run.
func (c *core) endBackoffs() {
	for _, a := range c.appOrder {
		switch {
		case a.fastEnds > 0 && c.hasStableExecutor(a):
			a.fastEnds, a.backoffUntil = 0, time.Time{}
		case !a.backoffUntil.IsZero() && !scheduler.BackingOff(a.backoffUntil, c.now()):
			a.backoffUntil = time.Time{} // fastEnds stays: the next fast end doubles
			c.schedule()
		}
	}
}
