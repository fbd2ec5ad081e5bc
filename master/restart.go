package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// Restart policies (docs/HEALTH.md). The rule (the attempts, the interval,
// the delay, what a failure past them does) is scheduler's
// (scheduler.AfterFailure, over wire.RestartPolicy.Verdict); the master
// keeps each app's failures within the interval, applies the answer (the
// app's end, or a later backoff) and tells the app's client. The counts
// are the leader's, as the relaunch backoff.

// restartPolicyOf is p with the master's defaults filled in (nil: none).
func (c *core) restartPolicyOf(p *wire.RestartPolicy) *wire.RestartPolicy {
	return scheduler.ResolveRestart(p, c.cfg.MaxExecutorRetries)
}

// applyRestartPolicy applies a's policy to e's failure; it reports
// whether it ended the app.
func (c *core) applyRestartPolicy(a *appInfo, e *executorInfo) bool {
	p := *a.rec.Desc.Restart
	now := c.now()
	r := scheduler.AfterFailure(p, c.cfg.MaxExecutorRetries, a.failures, a.backoffUntil, now)
	a.failures = r.Failures
	if r.Fail {
		c.finishApp(a, wire.AppFailed, fmt.Sprintf("restart policy: %d executors failed within %s, more than its %d attempts (last: %s)",
			len(a.failures), p.IntervalD(), r.Attempts, e.message), nil)
		return true
	}
	if !r.WaitUntil.IsZero() {
		a.backoffUntil = r.WaitUntil
		msg := fmt.Sprintf("executor %d failed (%d within %s, attempts %d): new executors wait %s", e.id, len(a.failures), p.IntervalD(), r.Attempts, r.WaitUntil.Sub(now).Round(time.Millisecond))
		c.publish(a, wire.AppEvent{Type: wire.EventRelaunchDelayed, Message: msg})
	}
	return false
}
