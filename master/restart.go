package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Restart policies (docs/HEALTH.md). An app that sets one counts its
// executors' failures (FAILED: a non-zero exit, a memory kill, checks that
// failed their count) within the policy's interval: past its attempts, it
// ends FAILED (mode fail) or its new executors wait until the oldest of
// them leaves the interval (mode delay); every failure delays the next
// executor by at least the policy's delay. An app without one keeps the
// master's rule: --max-executor-retries failures in a row with none
// running stably. The counts are the leader's, as the relaunch backoff.

// restartPolicyOf is p with the master's defaults filled in (nil: none).
func (c *core) restartPolicyOf(p *wire.RestartPolicy) *wire.RestartPolicy {
	if p == nil {
		return nil
	}
	out := *p
	attempts := p.AttemptsOr(max(c.cfg.MaxExecutorRetries, 0))
	interval, delay := wire.Duration(p.IntervalD()), wire.Duration(p.DelayD())
	out.Attempts, out.Interval, out.Delay, out.Mode = &attempts, &interval, &delay, p.ModeOr()
	return &out
}

// applyRestartPolicy applies a's policy to e's failure; it reports
// whether it ended the app.
func (c *core) applyRestartPolicy(a *appInfo, e *executorInfo) bool {
	p := *a.rec.Desc.Restart
	attempts := p.AttemptsOr(max(c.cfg.MaxExecutorRetries, 0))
	now := c.now()
	var fail bool
	var until time.Time
	a.failures, fail, until = p.Verdict(attempts, a.failures, now)
	if fail {
		c.finishApp(a, wire.AppFailed, fmt.Sprintf("restart policy: %d executors failed within %s, more than its %d attempts (last: %s)",
			len(a.failures), p.IntervalD(), attempts, e.message), nil)
		return true
	}
	if until.After(a.backoffUntil) {
		a.backoffUntil = until
		msg := fmt.Sprintf("executor %d failed (%d within %s, attempts %d): new executors wait %s", e.id, len(a.failures), p.IntervalD(), attempts, until.Sub(now).Round(time.Millisecond))
		c.publish(a, wire.AppEvent{Type: wire.EventRelaunchDelayed, Message: msg})
	}
	return false
}
