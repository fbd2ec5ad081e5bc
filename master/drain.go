package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Draining a worker (berth worker drain; Nomad's node drain): it turns
// DECOMMISSIONING and nothing new is placed on it; what runs there has
// until the deadline to end on its own. Then its executors are killed and
// counted LOST, so their apps get replacements elsewhere as after a lost
// worker, and its drivers are killed and relaunched elsewhere if
// supervised. The deadline is in the worker's record: a new leader goes on
// with the drain. Undrain, before the deadline, makes the worker ALIVE.

// DefaultDrainDeadline is a drain's deadline when the request gives none.
const DefaultDrainDeadline = 10 * time.Minute

// drainWorker starts (or re-times) the drain of worker id; it answers the
// worker's status once the drain is durable.
func (c *core) drainWorker(id string, deadline time.Duration, reply reply[wire.WorkerStatus]) {
	w, err := c.drainableWorker(id)
	if err != nil {
		reply.fail(err)
		return
	}
	if w.state != wire.WorkerAlive && w.state != wire.WorkerDecommissioning {
		reply.fail(conflict("worker %s is %s: only an ALIVE worker can be drained", id, w.state))
		return
	}
	if w.drainKilled && !w.drained() {
		reply.fail(conflict("worker %s's drain deadline has passed: what ran there is being killed and replaced (%d executors, %d drivers left); drain again once they are gone", id, len(w.executors), len(w.drivers)))
		return
	}
	if deadline <= 0 {
		deadline = DefaultDrainDeadline
	}
	until := c.now().Add(deadline)
	c.setDrain(w, &until, reply)
}

// undrainWorker ends the drain of worker id before its deadline.
func (c *core) undrainWorker(id string, reply reply[wire.WorkerStatus]) {
	w, err := c.drainableWorker(id)
	if err != nil {
		reply.fail(err)
		return
	}
	if w.state != wire.WorkerDecommissioning {
		reply.fail(conflict("worker %s is %s, not being drained", id, w.state))
		return
	}
	if w.drainKilled && !w.drained() {
		reply.fail(conflict("worker %s's drain deadline has passed: what ran there is being killed and replaced (%d executors, %d drivers left); undrain once they are gone", id, len(w.executors), len(w.drivers)))
		return
	}
	c.setDrain(w, nil, reply)
}

// drainableWorker is worker id, unless it is being removed: a drain's
// write of the whole record, committed after the removal's, would bring
// the removed worker's record back, with the removal never finished.
func (c *core) drainableWorker(id string) (*workerInfo, error) {
	w, err := c.liveWorker(id)
	if err == nil && w.removing != nil {
		return nil, conflict("worker %s is being removed", id)
	}
	return w, err
}

// setDrain writes w's record with the drain deadline until (nil: none) and,
// once durable, applies it.
func (c *core) setDrain(w *workerInfo, until *time.Time, reply reply[wire.WorkerStatus]) {
	rec := w.rec
	rec.DrainDeadline = until
	c.commit([]persistence.Command{persistence.PutWorker(rec)}, func() {
		w.rec = rec
		if until != nil {
			w.state, w.drainKilled = wire.WorkerDecommissioning, false // a new deadline, acted on anew
			c.touched(w)
			c.log.Info("draining worker", "worker", w.rec.ID, "deadline", until.Format(time.RFC3339))
			// Each app's client hears it, so that it can end its
			// executors there in time (Spark decommissions them).
			// (One whose placement is still being written hears it once
			// launched: launchExecutor.)
			for _, e := range sortedExecutors(w.executors) {
				if !e.launching {
					c.tellDraining(e)
				}
			}
		} else {
			w.state, w.drainKilled = wire.WorkerAlive, false
			c.touched(w)
			c.log.Info("drain ended: worker ALIVE", "worker", w.rec.ID)
		}
		c.schedule()
	}, answerWrite(reply, func() wire.WorkerStatus { return workerStatus(w) }))
}

// tellDraining tells e's app's client that e's worker is being drained,
// and until when e may run.
func (c *core) tellDraining(e *executorInfo) {
	w, until := e.worker, e.worker.drainDeadline()
	if until == nil {
		return
	}
	c.publish(e.app, wire.AppEvent{Type: wire.EventExecutorDraining, Executor: executorStatus(e),
		Message: fmt.Sprintf("worker %s is being drained: executor %d may run until %s, then it is killed and replaced elsewhere", w.rec.ID, e.id, until.Format(time.RFC3339))})
}

// drainState is the state of a worker that answers a new leader: ALIVE, or
// DECOMMISSIONING if its record says it is being drained.
func drainState(rec persistence.WorkerRecord) wire.WorkerState {
	if rec.DrainDeadline != nil {
		return wire.WorkerDecommissioning
	}
	return wire.WorkerAlive
}

// expireDrains kills what still runs on drained workers whose deadline has
// passed (from tick).
func (c *core) expireDrains() {
	now := c.now()
	var due []*workerInfo // collected first: what follows may change the list
	for _, w := range c.sortedWorkerList() {
		if w.state == wire.WorkerDecommissioning && !w.drainKilled && w.removing == nil && !now.Before(*w.rec.DrainDeadline) {
			due = append(due, w)
		}
	}
	for _, w := range due {
		w.drainKilled = true
		msg := fmt.Sprintf("killed: worker %s's drain deadline passed", w.rec.ID)
		c.log.Info("drain deadline passed; killing what is left", "worker", w.rec.ID, "executors", len(w.executors), "drivers", len(w.drivers))
		for _, e := range sortedExecutors(w.executors) {
			if !e.launching {
				c.endExecutor(e, executorEnd{state: wire.ExecutorLost, message: msg, event: wire.EventExecutorLost, note: msg, kill: true}, nil)
			}
		}
		for _, d := range sortedDrivers(w.drivers) {
			if !d.launching {
				c.fx.send(w, killDriverCommand(c.epoch, d.rec.ID))
				c.driverLost(d, msg, nil)
			}
		}
	}
}

// drained reports whether nothing runs on w any more.
func (w *workerInfo) drained() bool { return len(w.executors) == 0 && len(w.drivers) == 0 }

// drainDeadline is w's drain deadline while it is being drained, else
// nil: what its executors' statuses say.
func (w *workerInfo) drainDeadline() *time.Time {
	if w.state != wire.WorkerDecommissioning {
		return nil
	}
	return w.rec.DrainDeadline
}
