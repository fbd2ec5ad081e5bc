package master

import (
	"slices"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// submitDriver accepts a driver (cluster mode); it waits for a worker once
// its record is durable.
// A repeat of a keyed submission gets the first one's id instead.
func (c *core) submitDriver(desc wire.DriverDescription, idem keyed, reply func(any, error)) {
	if !c.leading() {
		reply(nil, c.notLeader())
		return
	}
	if desc.Cores == 0 {
		desc.Cores = 1
	}
	if desc.MemoryMB == 0 {
		desc.MemoryMB = defaultDriverMemoryMB
	}
	key := submissionKey{keyDriver, idem.key}
	if c.answerRepeat(key, idem.hash, c.listedDriver, reply) {
		return
	}
	rec := persistence.DriverRecord{ID: c.newDriverID(), Desc: desc, SubmittedAt: c.now(), State: wire.DriverSubmitted,
		IdempotencyKey: idem.key, IdempotencyHash: idem.hash}
	c.beginKeyed(key, idem.hash)
	c.addDriver(rec, nil, func(err error) {
		c.endKeyed(key, rec.ID, err)
		if err != nil {
			reply(nil, err)
			return
		}
		reply(wire.Submitted{ID: rec.ID}, nil)
	})
}

// addDriver writes a new driver (with the writes in before, if any) and
// queues it once durable.
func (c *core) addDriver(rec persistence.DriverRecord, before []persistence.Command, then func(error)) {
	gen := c.gen
	c.fx.persist(append(before, persistence.PutDriver(rec, 0)), func(err error) {
		if err != nil {
			then(c.persistErr(gen, err))
			return
		}
		then(nil)
		if gen != c.gen {
			return
		}
		d := &driverInfo{rec: rec, state: wire.DriverSubmitted}
		c.drivers[rec.ID] = d
		c.rememberKey(submissionKey{keyDriver, rec.IdempotencyKey}, rec.ID)
		c.waitingDrivers = append(c.waitingDrivers, d)
		c.log.Info("driver submitted", "driver", rec.ID, "relaunchOf", rec.RelaunchOf)
		c.schedule()
	})
}

// launchDriver starts a waiting driver on w. Its placement is written, so a
// new leader can tell a driver that was running (and must be claimed by its
// worker) from one that never started.
func (c *core) launchDriver(w *workerInfo, d *driverInfo) {
	c.waitingDrivers = slices.DeleteFunc(c.waitingDrivers, func(x *driverInfo) bool { return x == d })
	d.worker, d.state = w, wire.DriverRunning
	w.addDriver(d)
	rec := d.rec
	rec.State, rec.WorkerID = wire.DriverRunning, w.rec.ID
	d.rec = rec
	c.fx.persist([]persistence.Command{persistence.PutDriver(rec, 0)}, c.logPersistFailure("launch driver "+rec.ID))
	c.log.Info("launching driver", "driver", rec.ID, "worker", w.rec.ID)
	c.fx.send(w, workerCommand{
		path: "/v1/drivers",
		body: wire.LaunchDriver{
			Epoch: c.epoch, MasterURL: c.cfg.Advertise, DriverID: rec.ID,
			Command: rec.Desc.Command, Env: rec.Desc.Env, Cores: rec.Desc.Cores,
			MemoryMB: rec.Desc.MemoryMB, Supervise: rec.Desc.Supervise,
		},
		driverID: rec.ID,
	})
}

// killDriver kills a driver on request: a waiting one ends at once, a running
// one is killed by its worker, which then reports KILLED.
func (c *core) killDriver(id string, reply func(any, error)) {
	if !c.leading() {
		reply(nil, c.notLeader())
		return
	}
	d := c.drivers[id]
	if d == nil {
		if done := c.completedDriver(id); done != nil {
			reply(driverStatus(done), nil) // already over: nothing to do, as for apps
			return
		}
		reply(nil, notFound("driver", id))
		return
	}
	if d.worker == nil {
		gen := c.gen
		c.finishDriver(d, wire.DriverKilled, "killed by request", nil, func(err error) {
			if err != nil {
				reply(nil, c.persistErr(gen, err))
				return
			}
			reply(driverStatus(d), nil)
		})
		return
	}
	d.killRequested = true
	c.fx.send(d.worker, workerCommand{path: "/v1/drivers/kill", body: wire.KillDriver{Epoch: c.epoch, DriverID: id}, driverID: id})
	reply(driverStatus(d), nil)
}

// driverStateChanged applies a worker's report about a driver it runs. A
// final state is acknowledged only once durable: a new leader that found the
// driver still RUNNING, with no worker claiming it, would relaunch it.
func (c *core) driverStateChanged(workerID string, m wire.DriverStateChanged, reply func(any, error)) {
	w, err := c.reportingWorker(workerID) // refuses too when not leading
	if err != nil {
		reply(nil, err)
		return
	}
	d := c.drivers[m.DriverID]
	if d == nil || d.worker != w {
		if !m.State.Finished() {
			c.fx.send(w, workerCommand{path: "/v1/drivers/kill", body: wire.KillDriver{Epoch: c.epoch, DriverID: m.DriverID}, driverID: m.DriverID})
		}
		reply(nil, notFound("driver", m.DriverID))
		return
	}
	if !m.State.Finished() {
		d.state = m.State
		reply(struct{}{}, nil)
		return
	}
	c.finishDriver(d, m.State, m.Message, m.ExitCode, c.ack(reply))
}

// finishDriver ends a driver and writes its final record.
func (c *core) finishDriver(d *driverInfo, state wire.DriverState, msg string, exitCode *int, then func(error)) {
	if then == nil {
		then = c.logPersistFailure("finish driver " + d.rec.ID)
	}
	cmd, ok := c.endDriver(d, state, msg, exitCode)
	if !ok {
		then(nil)
		return
	}
	c.fx.persist([]persistence.Command{cmd}, then)
}

// endDriver ends a driver in memory and returns the write of its final
// record (false if it had already ended).
func (c *core) endDriver(d *driverInfo, state wire.DriverState, msg string, exitCode *int) (persistence.Command, bool) {
	if _, ok := c.drivers[d.rec.ID]; !ok {
		return persistence.Command{}, false
	}
	c.log.Info("driver ended", "driver", d.rec.ID, "state", state, "reason", msg)
	delete(c.drivers, d.rec.ID)
	c.waitingDrivers = slices.DeleteFunc(c.waitingDrivers, func(x *driverInfo) bool { return x == d })
	d.state, d.message, d.exitCode, d.endedAt = state, msg, exitCode, c.now()
	rec := d.finalRecord()
	if d.worker != nil {
		d.worker.removeDriver(d)
	}
	c.completedDrivers = appendBounded(c.completedDrivers, d, c.cfg.RetainedDrivers, func(old *driverInfo) {
		c.forgetKey(submissionKey{keyDriver, old.rec.IdempotencyKey}, old.rec.ID)
	})
	c.schedule()
	return persistence.PutDriver(rec, c.cfg.RetainedDrivers), true
}

// relaunchDriver replaces a supervised driver whose worker was lost with a
// new one under a new id: the old process may still run on a partitioned
// worker, and reports about it must not be mistaken for the new one
// (SPARK-19900). The old driver's end and the new driver are one write, so
// the driver cannot vanish between the two.
func (c *core) relaunchDriver(d *driverInfo, reason string) {
	// The relaunch inherits the key: a repeat of the submission gets the
	// driver that runs now, and the key lives as long as the chain does.
	rec := persistence.DriverRecord{ID: c.newDriverID(), Desc: d.rec.Desc, SubmittedAt: c.now(), State: wire.DriverSubmitted, RelaunchOf: d.rec.ID,
		IdempotencyKey: d.rec.IdempotencyKey, IdempotencyHash: d.rec.IdempotencyHash}
	d.relaunchedAs = rec.ID
	end, ok := c.endDriver(d, wire.DriverRelaunching, reason+"; relaunched as "+rec.ID, nil)
	if !ok {
		return
	}
	c.addDriver(rec, []persistence.Command{end}, c.logPersistFailure("relaunch driver "+d.rec.ID))
}

func (c *core) completedDriver(id string) *driverInfo {
	for _, d := range c.completedDrivers {
		if d.rec.ID == id {
			return d
		}
	}
	return nil
}
