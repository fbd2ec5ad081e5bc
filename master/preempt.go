package master

import (
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Preemption's writes and kills (docs/QUEUES.md); what to take back, and
// when, is the scheduler's (scheduler/preempt.go). A preemption is
// written before anything is killed (the executor's record says why), so
// a new leader carries it through: it kills what the old one had marked,
// once, and nothing else.

// preempt writes that e is taken back (why), then kills it with the
// preemption grace and tells its app.
func (c *core) preempt(e *executorInfo, why, owed string) {
	a := e.app
	c.markReclaimed(e, why, owed) // taken: a later round does not pick it again
	c.commit([]persistence.Command{persistence.PutExecutor(e.record())}, func() {
		if !c.live(e) {
			return
		}
		if q := c.queues[a.spec.Queue]; q != nil {
			q.preemptions++
		}
		c.metrics.preemptions.WithLabelValues(a.spec.Queue).Inc()
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
		c.round.reclaiming[owed]++
	}
	e.app.leaving(e, 1)
}

// unmarkReclaimed undoes markReclaimed (the mark was not written, or e
// ended).
func (c *core) unmarkReclaimed(e *executorInfo) {
	if e.reclaimedFor != "" {
		c.round.reclaiming[e.reclaimedFor]--
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
