package master

import (
	"fmt"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// Relaunch backoff (docs/HEALTH.md). The rule (which ends count, the
// doubling, what clears it) is scheduler's (scheduler.Backoff); the master
// keeps each app's backoff, hands it the ends and the ticks, tells the
// app's client, and the next view carries it (App.BackoffUntil). The
// backoff is the leader's: a new leader starts without one.

// backoff is a's relaunch backoff.
func (a *appInfo) backoff() scheduler.Backoff {
	return scheduler.Backoff{FastEnds: a.fastEnds, Until: a.backoffUntil}
}

// setBackoff keeps b as a's relaunch backoff.
func (a *appInfo) setBackoff(b scheduler.Backoff) { a.fastEnds, a.backoffUntil = b.FastEnds, b.Until }

// noteExecutorEnd applies e's end to its app's backoff
// (scheduler.Backoff.AfterEnd) and tells the app's client when it starts
// or doubles one.
func (c *core) noteExecutorEnd(e *executorInfo) {
	a := e.app
	b, delay := a.backoff().AfterEnd(e.state, e.cause, e.runningSince, c.now())
	a.setBackoff(b)
	if delay == 0 {
		return
	}
	msg := fmt.Sprintf("executor %d ended soon after it started (%d in a row): new executors wait %s", e.id, a.fastEnds, delay)
	c.log.Info("relaunch backoff", "app", a.rec.ID, "executor", e.id, "fastEnds", a.fastEnds, "delay", delay)
	c.publish(a, wire.AppEvent{Type: wire.EventRelaunchDelayed, Message: msg})
}

// endBackoffs schedules the apps whose backoff is over (from tick), and
// clears the backoff of apps whose executors have proved they run.
func (c *core) endBackoffs() {
	now := c.now()
	for _, a := range c.appOrder {
		b := a.backoff()
		// Only an app with fast ends has one a stable executor clears:
		// walking every app's executors at every tick would cost the
		// cluster's size.
		next, over := b.AtTick(b.FastEnds > 0 && c.hasStableExecutor(a), now)
		a.setBackoff(next)
		if over {
			c.schedule()
		}
	}
}
