package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// The loop's timers (tick, every tickInterval): workers silent past their
// timeout are removed, apps whose client is gone past its lease end, the
// recovery deadline passes; a loop that was paused re-arms instead.

// tick runs the timers: worker expiry, app leases, the recovery deadline.
func (c *core) tick() {
	now := c.now()
	last := c.lastTick
	c.lastTick = now
	if !c.leading() {
		return
	}
	if !last.IsZero() && now.Sub(last) > c.cfg.pauseThreshold() {
		// The loop did not run for much longer than a tick: the process was
		// paused (SIGSTOP, a long GC, a suspended VM) or starved, so
		// heartbeats went unread. Silence says nothing about the workers
		// now; re-arm every deadline rather than declare them all dead.
		// (A paused Raft leader is deposed meanwhile; this also keeps it
		// from telling clients their executors were lost.)
		c.log.Warn("master loop was paused; re-arming heartbeat deadlines instead of expiring workers", "paused", now.Sub(last).Round(time.Millisecond))
		c.rearm(now)
		return
	}
	switch c.status {
	case wire.MasterRecovering:
		if !c.now().Before(c.recoveryDeadline) {
			c.completeRecovery()
		}
		return
	case wire.MasterCompletingRecovery:
		return // the silent workers' removals are being committed
	}
	c.expireWorkers()
	c.expireDrains()
	c.expireApps()
	c.resetRetries()
	c.endBackoffs()
	c.expireExclusions()
	c.flushSuppressedAudit()
	if c.round.owing {
		c.schedule() // a preemption may have come due; its wait is told anew
	}
}

// rearm restarts the heartbeat deadline of every live worker and the lease
// of every app without a stream.
func (c *core) rearm(now time.Time) {
	for _, w := range c.workers {
		if w.state == wire.WorkerAlive || w.state == wire.WorkerDecommissioned || w.state == wire.WorkerDecommissioning {
			w.lastHeartbeat = now
		}
	}
	for _, a := range c.appOrder {
		a.lastSeen = now
	}
}

// expireWorkers removes ALIVE workers silent for the worker timeout and
// forgets DEAD ones after reaperIterations timeouts.
func (c *core) expireWorkers() {
	now := c.now()
	// Runs every tick over every worker (the list by id: a slice walks
	// faster than a map of 100,000): collect first, then act, in id order
	// so that removals are deterministic.
	var silent, forgotten []*workerInfo
	for _, w := range c.sortedWorkerList() {
		switch w.state {
		case wire.WorkerAlive, wire.WorkerDecommissioned, wire.WorkerDecommissioning:
			if w.removing == nil && now.Sub(w.lastHeartbeat) > c.cfg.WorkerTimeout {
				silent = append(silent, w)
			}
		case wire.WorkerDead:
			if now.Sub(w.deadSince) > reaperIterations*c.cfg.WorkerTimeout {
				forgotten = append(forgotten, w)
			}
		}
	}
	for _, w := range forgotten {
		c.dropWorker(w)
	}
	for _, w := range silent {
		c.metrics.workerExpiries.Inc()
		c.removeWorker(w, fmt.Sprintf("no heartbeat for %s (timeout %s)", now.Sub(w.lastHeartbeat).Round(time.Millisecond), c.cfg.WorkerTimeout), nil)
	}
}

// expireApps finishes apps whose client has been gone for --app-timeout:
// no event stream open and no heartbeat. That includes an app whose client
// has not answered a new leader yet: recovery does not end it (its
// executors keep running), its lease does.
func (c *core) expireApps() {
	now := c.now()
	// Runs every tick: collect first (removing edits appOrder), then remove.
	var gone []*appInfo
	for _, a := range c.appOrder {
		if a.ending == nil && len(a.subs) == 0 && now.Sub(a.lastSeen) > c.cfg.AppTimeout && !a.rec.Desc.Detached {
			gone = append(gone, a)
		}
	}
	for _, a := range gone {
		msg := fmt.Sprintf("client gone for more than %s", c.cfg.AppTimeout)
		if a.state == wire.AppUnknown {
			msg = fmt.Sprintf("client did not answer the new leader within %s (--app-timeout)", c.cfg.AppTimeout)
		}
		c.finishApp(a, wire.AppFinished, msg, nil)
	}
}

// resetRetries clears the failure count of apps with an executor that has
// proved it runs (called from tick).
func (c *core) resetRetries() {
	for _, a := range c.appOrder {
		if a.retryCount > 0 && c.hasStableExecutor(a) {
			a.retryCount = 0
		}
	}
}
