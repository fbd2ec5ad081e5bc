package master

import (
	"slices"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// submitDriver accepts a driver (cluster mode); it waits for a worker once
// its record is durable.
// A repeat of a keyed submission gets the first one's id instead.
func (c *core) submitDriver(desc wire.DriverDescription, idem keyed, reply reply[wire.Submitted]) {
	if desc.Cores == 0 {
		desc.Cores = 1
	}
	if desc.MemoryMB == 0 {
		desc.MemoryMB = defaultDriverMemoryMB
	}
	if err := c.placeInQueue(idem.tenant, &desc.ProcessSpec); err != nil {
		reply.fail(err)
		return
	}
	key := submissionKey{keyDriver, idem.key}
	if !c.admitKeyed(key, idem.hash, reply) {
		return
	}
	rec := persistence.DriverRecord{ID: c.newDriverID(), Desc: desc, SubmittedAt: c.now(), State: wire.DriverSubmitted,
		IdempotencyKey: idem.key, IdempotencyHash: idem.hash, Tenant: idem.tenant, UnixUser: c.unixUserOf(idem.tenant)}
	reply = c.registering.submitting(desc.Queue, idem.tenant, reply)
	c.commitKeyed(key, rec.ID, persistence.PutDriver(rec, 0), func() { c.driverAdded(rec) }, reply)
}

// driverAdded applies a durable new driver: it waits for a worker.
func (c *core) driverAdded(rec persistence.DriverRecord) {
	d := newDriverInfo(rec, wire.DriverSubmitted)
	c.drivers[rec.ID] = d
	c.rememberKey(submissionKey{keyDriver, rec.IdempotencyKey}, rec.ID)
	c.waitingDrivers = append(c.waitingDrivers, d)
	c.log.Info("driver submitted", "driver", rec.ID, "relaunchOf", rec.RelaunchOf)
	c.schedule()
}

// updateDriver writes d's record as change makes it (with extra commands in
// the same write), after the writes of d already in flight. Once durable,
// d.rec is the written record and apply runs (if this leadership goes on);
// done, if not nil, learns the outcome.
func (c *core) updateDriver(d *driverInfo, retain int, change func(*persistence.DriverRecord), extra []persistence.Command, apply func(), done func(error)) {
	if done == nil {
		done = c.logPersistFailure("write driver " + d.rec.ID)
	}
	record[persistence.DriverRecord]{
		rec: &d.rec, queue: &d.writes,
		listed: func() bool { return c.drivers[d.rec.ID] == d },
		gone:   func() error { return c.driverGone(d) },
		put: func(r persistence.DriverRecord) []persistence.Command {
			return append([]persistence.Command{persistence.PutDriver(r, retain)}, extra...)
		},
	}.write(c, recordChange[persistence.DriverRecord]{edit: change, apply: apply, done: done})
}

// launchDriver starts a waiting driver on w. The driver holds w's resources
// at once, but its launch record (state RUNNING and its worker) is durable
// before the launch is sent, so a new leader can tell a driver that may run
// (and must be claimed by its worker) from one that never started.
func (c *core) launchDriver(w *workerInfo, d *driverInfo, grants wire.ResourceGrants, ports map[string]int) {
	c.waitingDrivers = slices.DeleteFunc(c.waitingDrivers, func(x *driverInfo) bool { return x == d })
	d.worker, d.launching, d.ports, d.health = w, true, ports, ""
	w.addDriver(d, grants)
	c.log.Info("launching driver", "driver", d.rec.ID, "worker", w.rec.ID)
	token, hash := mintDriverToken(d.rec.ID)
	c.updateDriver(d, 0, func(rec *persistence.DriverRecord) {
		rec.State, rec.WorkerID, rec.WorkerIncarnation = wire.DriverRunning, w.rec.ID, w.incarnation
		rec.CredentialHash, rec.Resources, rec.Ports = hash, grants, ports
	}, nil, func() {
		d.launching, d.state = false, wire.DriverRunning
		c.viewsStale() // its committed use changed; adding it marked its worker for the index
		c.fx.send(w, commandOn(wire.WorkerAPI.LaunchDriver, wire.LaunchDriver{
			Epoch: c.epoch, MasterURL: c.cfg.Advertise, DriverID: d.rec.ID,
			Process:   process(d.rec.Desc.Command, d.rec.Desc.Env, d.rec.Desc.ProcessSpec, d.rec.UnixUser, d.rec.Desc.Cores, d.rec.Desc.MemoryMB, grants, ports),
			Supervise: d.rec.Desc.Supervise, Token: token, Restart: c.restartPolicyOf(d.rec.Desc.Restart),
		}))
	}, func(err error) {
		if err == nil || c.drivers[d.rec.ID] != d || !d.launching {
			return
		}
		c.log.Error("driver launch not committed; it waits again", "driver", d.rec.ID, "err", err)
		w.removeDriver(d)
		d.worker, d.launching = nil, false
		c.waitingDrivers = append([]*driverInfo{d}, c.waitingDrivers...)
		c.schedule()
	})
}

// requeueDriver puts back in the queue a driver whose worker refused its
// launch (nothing started): its record waits again, durably, so that a
// new leader does not look for it on that worker. A kill accepted
// meanwhile ends it KILLED instead.
func (c *core) requeueDriver(d *driverInfo, why string) {
	c.log.Info("driver not started; it waits again", "driver", d.rec.ID, "worker", d.worker.rec.ID, "why", why)
	c.updateDriver(d, 0, func(rec *persistence.DriverRecord) {
		rec.State, rec.WorkerID, rec.WorkerIncarnation = wire.DriverSubmitted, "", ""
		rec.CredentialHash, rec.Resources, rec.Ports = "", nil, nil
	}, nil, func() {
		if d.worker != nil {
			d.worker.removeDriver(d)
		}
		d.worker, d.state, d.ports, d.health = nil, wire.DriverSubmitted, nil, ""
		c.viewsStale()
		if d.rec.KillRequested {
			c.finishDriver(d, wire.DriverKilled, "killed by request; "+why, nil, nil)
			return
		}
		c.waitingDrivers = append([]*driverInfo{d}, c.waitingDrivers...)
		c.schedule()
	}, nil)
}

// killDriver kills a driver on request. A waiting one ends KILLED. For one
// that runs, the request is made durable (so a new leader kills it too,
// and does not relaunch it) before its worker is told and the request is
// answered; the worker then reports KILLED. Killing a driver that ended
// answers its final status.
func (c *core) killDriver(id string, reply reply[wire.DriverStatus]) {
	d := toEnd(c, c.drivers[id], c.completedDriver, driverStatus, "driver", id, reply)
	if d == nil {
		return
	}
	answer := func(err error) {
		if err != nil {
			reply.fail(err)
		} else if d.rec.Finished() && !d.state.Finished() {
			// Durable, but this leadership ended before applying it.
			reply(recordDriverStatus(&d.rec), nil)
		} else {
			reply(*driverStatus(d), nil)
		}
	}
	switch {
	case d.ending != nil:
		d.ending.add(answer)
	case d.writes.busy:
		// Decide against the record as the writes in flight leave it
		// (a launch being committed, say), as this request: its audit
		// entry goes with the write it makes then.
		req := c.req
		d.writes.then(func() {
			was := c.req
			c.req = req
			defer func() { c.req = was }()
			c.killDriver(id, reply)
		})
	case d.worker == nil:
		c.finishDriver(d, wire.DriverKilled, "killed by request", nil, answer)
	case d.rec.KillRequested:
		c.fx.send(d.worker, killDriverCommand(c.epoch, id)) // again: harmless
		answer(nil)
	default:
		c.updateDriver(d, 0, func(rec *persistence.DriverRecord) { rec.KillRequested = true }, nil, func() {
			if d.worker != nil {
				c.fx.send(d.worker, killDriverCommand(c.epoch, id))
			}
		}, answer)
	}
}

// driverStateChanged applies a worker's report about a driver it runs. A
// final state is acknowledged only once durable: a new leader that found the
// driver still RUNNING, with no worker claiming it, would relaunch it.
func (c *core) driverStateChanged(workerID string, m wire.DriverStateChanged, reply reply[wire.None]) {
	w, err := c.reportingWorker(workerID) // refuses too when not leading
	if err != nil {
		reply.fail(err)
		return
	}
	d := c.drivers[m.DriverID]
	if d == nil || d.worker != w || d.launching {
		if !m.State.Finished() {
			c.fx.send(w, killDriverCommand(c.epoch, m.DriverID))
		}
		reply.fail(notFound("driver", m.DriverID))
		return
	}
	if !m.State.Finished() {
		d.state = m.State
		if m.Health != "" {
			d.health = m.Health
		}
		reply(wire.None{}, nil)
		return
	}
	if m.State == wire.DriverFailed || m.State == wire.DriverError {
		c.noteFailure(w, d.rec.ID, nil, m.Message, m.Cause) // the worker's own failures count toward its health
	}
	if m.OutOfTouch {
		c.driverLost(d, m.Message, c.ack(reply)) // as if its worker were lost
		return
	}
	c.finishDriver(d, m.State, m.Message, m.ExitCode, c.ack(reply))
}

// driverEnd is how a driver ends; relaunch, if set, is the driver that
// replaces it, written in the same write.
type driverEnd struct {
	state    wire.DriverState
	message  string
	exitCode *int
	relaunch *persistence.DriverRecord
}

// finishDriver ends a driver: its final record is written and, once
// durable, the driver leaves the active list and its worker. Until then it
// is listed as it was; other ends of it wait for this one's outcome. done
// may be nil.
func (c *core) finishDriver(d *driverInfo, state wire.DriverState, msg string, exitCode *int, done func(error)) {
	c.endDriver(d, driverEnd{state: state, message: msg, exitCode: exitCode}, done)
}

func (c *core) endDriver(d *driverInfo, end driverEnd, done func(error)) {
	if joinEnding(&d.ending, done) {
		return
	}
	endedAt := c.now()
	var extra []persistence.Command
	if end.relaunch != nil {
		extra = append(extra, persistence.PutDriver(*end.relaunch, 0))
	}
	c.updateDriver(d, c.cfg.RetainedDrivers, func(rec *persistence.DriverRecord) {
		rec.State, rec.Message, rec.ExitCode = end.state, end.message, end.exitCode
		rec.EndedAt = &endedAt
		rec.Desc.Env = nil // a completed record keeps no environment (secrets, bulk)
		if d.worker != nil {
			rec.WorkerID = d.worker.rec.ID
		}
		if end.relaunch != nil {
			rec.RelaunchedAs = end.relaunch.ID
		}
	}, extra, func() {
		c.driverEnded(d, endedAt)
		if end.relaunch != nil {
			c.driverAdded(*end.relaunch)
		}
	}, func(err error) { c.endingWritten(&d.ending, err, "driver", d.rec.ID) })
}

// driverEnded applies a driver's durable end, as its record (d.rec) says.
func (c *core) driverEnded(d *driverInfo, endedAt time.Time) {
	if c.drivers[d.rec.ID] != d {
		return
	}
	c.log.Info("driver ended", "driver", d.rec.ID, "state", d.rec.State, "reason", d.rec.Message)
	delete(c.drivers, d.rec.ID)
	c.waitingDrivers = slices.DeleteFunc(c.waitingDrivers, func(x *driverInfo) bool { return x == d })
	d.state, d.message, d.exitCode, d.relaunchedAs, d.endedAt = d.rec.State, d.rec.Message, d.rec.ExitCode, d.rec.RelaunchedAs, endedAt
	if d.worker != nil {
		d.worker.removeDriver(d)
	}
	c.completedDrivers = appendBounded(c.completedDrivers, d, c.cfg.RetainedDrivers, func(old *driverInfo) {
		c.forgetKey(submissionKey{keyDriver, old.rec.IdempotencyKey}, old.rec.ID)
	})
	c.schedule()
}

// driverLost ends a driver whose process is gone or unaccounted for (its
// worker was lost, its launch failed, no worker claimed it after a
// failover): a supervised one is relaunched, one whose kill was requested
// ends KILLED, any other ends in ERROR. done, if set, learns the outcome.
func (c *core) driverLost(d *driverInfo, msg string, done func(error)) {
	if d.writes.busy {
		// A write of the driver is in flight, perhaps its kill: decide
		// once it is done, on the record as it then is (a kill accepted
		// before the worker was lost makes the driver KILLED, not ERROR,
		// and is not relaunched).
		d.writes.do(func() {
			d.writes.done()
			if c.drivers[d.rec.ID] != d || d.ending != nil {
				if done != nil {
					done(nil)
				}
				return
			}
			c.driverLost(d, msg, done)
		})
		return
	}
	switch {
	case d.rec.KillRequested:
		c.finishDriver(d, wire.DriverKilled, "killed by request; "+msg, nil, done)
	case d.rec.Desc.Supervise:
		c.relaunchDriver(d, msg, done)
	default:
		c.finishDriver(d, wire.DriverError, msg, nil, done)
	}
}

// relaunchDriver replaces a supervised driver whose worker was lost with a
// new one under a new id: the old process may still run on a partitioned
// worker, and reports about it must not be mistaken for the new one
// (SPARK-19900). The old driver's end and the new driver are one write, so
// the driver cannot vanish between the two.
func (c *core) relaunchDriver(d *driverInfo, reason string, done func(error)) {
	// The relaunch inherits the key: a repeat of the submission gets the
	// driver that runs now, and the key lives as long as the chain does.
	rec := persistence.DriverRecord{ID: c.newDriverID(), Desc: d.rec.Desc, SubmittedAt: c.now(), State: wire.DriverSubmitted, RelaunchOf: d.rec.ID, Tenant: d.rec.Tenant, UnixUser: d.rec.UnixUser,
		IdempotencyKey: d.rec.IdempotencyKey, IdempotencyHash: d.rec.IdempotencyHash}
	c.metrics.driverRelaunches.Inc()
	c.endDriver(d, driverEnd{state: wire.DriverRelaunching, message: reason + "; relaunched as " + rec.ID, relaunch: &rec}, done)
}

// findDriver is the driver the master lists under id, active or
// completed; nil if none.
func (c *core) findDriver(id string) *driverInfo {
	return listed(c.drivers, c.completedDrivers, id, driverID)
}

func (c *core) completedDriver(id string) *driverInfo {
	return listed(nil, c.completedDrivers, id, driverID)
}

func driverID(d *driverInfo) string { return d.rec.ID }
