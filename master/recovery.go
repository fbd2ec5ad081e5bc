package master

import (
	"slices"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// elected starts a leadership: nothing is served until prepareLeadership
// (Barrier, epoch bump, state read) ends in leadershipReady.
func (c *core) elected() {
	c.gen++
	c.status, c.preparing = wire.MasterRecovering, true
	c.leaderSince = c.now()
	c.metrics.leadershipChanges.Inc()
	c.reset()
	c.log.Info("elected leader; preparing", "gen", c.gen)
	c.fx.prepareLeadership(c.gen)
}

// revoked ends a leadership at once: no more scheduling, no more commands,
// streams closed (clients find the new leader). The process stays up as a
// follower, unlike Spark's master, which exits.
func (c *core) revoked() {
	c.gen++
	was := c.status
	c.status, c.preparing = wire.MasterStandby, false
	c.fx.dropOutbound()
	for _, a := range c.appOrder {
		c.closeSubscribers(a)
	}
	c.reset()
	c.log.Info("leadership revoked; now a follower", "was", was, "gen", c.gen)
}

// leadershipReady takes the state read by a new leader and starts Spark's
// recovery protocol: every worker and app UNKNOWN until it answers, workers
// told the master changed. With nothing to recover the master is ALIVE at
// once (SPARK-46664).
func (c *core) leadershipReady(gen uint64, s *persistence.State, err error) {
	if gen != c.gen || !c.preparing {
		return // revoked meanwhile
	}
	if err != nil {
		c.log.Error("preparing leadership failed; retrying", "err", err)
		c.fx.prepareLeadership(gen)
		return
	}
	c.preparing = false
	c.epoch = s.Epoch
	c.nextAppNumber, c.nextDriverNumber = s.NextAppNumber, s.NextDriverNumber
	now := c.now()
	c.loadCompleted(s)
	c.indexKeys(s)
	c.loadQueues(s)
	c.loadTenants(s)
	if s.Empty() {
		c.status = wire.MasterAlive
		c.metrics.recovery.Set(c.now().Sub(c.leaderSince).Seconds())
		c.log.Info("leader ALIVE; nothing to recover", "epoch", c.epoch)
		return
	}
	for _, rec := range sortedRecords(s.Workers, func(r *persistence.WorkerRecord) string { return r.ID }) {
		c.putWorker(newWorkerInfo(*rec, wire.WorkerUnknown, now))
	}
	var orphans []persistence.Command
	var apps []*appInfo
	for _, rec := range sortedRecords(s.Apps, func(r *persistence.AppRecord) string { return sortTime(r.SubmittedAt) + r.ID }) {
		if rec.Finished() {
			continue
		}
		state := wire.AppUnknown
		if rec.Desc.Detached { // no client to wait for
			state = wire.AppWaiting
		}
		a := newAppInfo(loadedApp(rec), state, now)
		// Ids below the reservation may have been used by the previous
		// leader; start above them (a fresh block is reserved below).
		a.nextExecID = rec.ExecutorIDsReserved
		if ended := s.EndedExecutors[rec.ID]; ended != nil {
			a.finished = slices.Clone(ended.Executors) // as the leader before listed them
		}
		c.apps[rec.ID] = a
		c.appOrder = append(c.appOrder, a)
		apps = append(apps, a)
	}
	// Executors as placed by earlier leaders (oldest first: their order of
	// age, for preemption); workers confirm them (or not).
	for _, rec := range sortedRecords(s.Executors, func(r *persistence.ExecutorRecord) string { return sortTime(r.StartedAt) + r.Key() }) {
		a, w := c.apps[rec.AppID], c.workers[rec.WorkerID]
		if a == nil || w == nil {
			orphans = append(orphans, persistence.DeleteExecutor(rec.AppID, rec.ID))
			continue
		}
		e := &executorInfo{app: a, id: rec.ID, worker: w, cores: rec.Cores, memory: rec.MemoryMB, resources: rec.Resources, state: wire.ExecutorLaunching,
			started: rec.StartedAt, ports: rec.Ports, seq: c.nextSeq()}
		a.adopt(e)
		if rec.PreemptedFor != "" {
			// Being taken back: this leader finishes it (once), and counts
			// it as its former leader did.
			c.markReclaimed(e, rec.PreemptedFor, rec.ReclaimedFor)
			c.inheritedPreemptions[e] = struct{}{}
		}
		a.hosts[w.rec.ID] = struct{}{}
	}
	for _, rec := range sortedRecords(s.Drivers, func(r *persistence.DriverRecord) string { return sortTime(r.SubmittedAt) + r.ID }) {
		if rec.Finished() {
			continue
		}
		d := newDriverInfo(loadedDriver(rec), wire.DriverUnknown)
		if rec.State == wire.DriverSubmitted {
			d.state = wire.DriverSubmitted // never launched: it just waits again
			c.waitingDrivers = append(c.waitingDrivers, d)
		}
		c.drivers[rec.ID] = d
	}
	if len(orphans) > 0 {
		c.fx.persist(orphans, c.logPersistFailure("forget orphaned executors"))
	}
	for _, a := range apps {
		c.ensureExecutorIDs(a, 1)
	}
	c.status = wire.MasterRecovering
	c.recoveryDeadline = now.Add(c.cfg.RecoveryTimeout)
	c.log.Info("leader RECOVERING", "epoch", c.epoch, "workers", len(c.workers), "apps", len(c.apps), "drivers", len(c.drivers), "timeout", c.cfg.RecoveryTimeout)
	for _, w := range c.sortedWorkerList() {
		c.fx.send(w, commandOn(wire.WorkerAPI.Reconnect, wire.Reconnect{Epoch: c.epoch, Master: c.cfg.Advertise}))
	}
	c.maybeCompleteRecovery()
}

// loadCompleted lists the finished apps and drivers kept in the state.
func (c *core) loadCompleted(s *persistence.State) {
	for _, rec := range sortedRecords(s.Apps, func(r *persistence.AppRecord) string { return sortTime(endTime(r.EndedAt)) + r.ID }) {
		if rec.Finished() {
			a := newAppInfo(loadedApp(rec), rec.State, endTime(rec.EndedAt))
			a.endedAt, a.message, a.coresGranted = endTime(rec.EndedAt), rec.Message, rec.CoresGranted
			c.completedApps = append(c.completedApps, a)
		}
	}
	for _, rec := range sortedRecords(s.Drivers, func(r *persistence.DriverRecord) string { return sortTime(endTime(r.EndedAt)) + r.ID }) {
		if rec.Finished() {
			d := newDriverInfo(loadedDriver(rec), rec.State)
			d.exitCode, d.message, d.relaunchedAs, d.endedAt = rec.ExitCode, rec.Message, rec.RelaunchedAs, endTime(rec.EndedAt)
			c.completedDrivers = append(c.completedDrivers, d)
		}
	}
}

// loadedApp and loadedDriver are a record read from the state as the
// master keeps it: its queue named. The master names an app's or a
// driver's queue once, when it admits it (placeInQueue) or reads its
// record (here: a new leader's state, a follower's view), so that nothing
// after looks it up again (its status, its spec, its driver's apps); a
// record from before queues, or from a master that kept "", names none.
func loadedApp(rec *persistence.AppRecord) persistence.AppRecord {
	r := *rec
	r.Desc.Queue = wire.QueueName(r.Desc.Queue)
	return r
}

func loadedDriver(rec *persistence.DriverRecord) persistence.DriverRecord {
	r := *rec
	r.Desc.Queue = wire.QueueName(r.Desc.Queue)
	return r
}

// maybeCompleteRecovery ends recovery as soon as every worker has answered.
// What recovery must learn is what runs where, and only workers say that;
// app clients answer in their own time (an app whose client has not
// answered keeps its executors and gets no new ones until it does, see
// completeRecovery), so the master does not wait for them.
func (c *core) maybeCompleteRecovery() {
	if c.status != wire.MasterRecovering || c.preparing {
		return
	}
	for _, w := range c.workers {
		if w.state == wire.WorkerUnknown {
			return
		}
	}
	c.completeRecovery()
}

// completeRecovery removes what did not answer and starts scheduling:
// silent workers are removed (their executors LOST), drivers no worker
// claimed are relaunched if supervised or end (driverLost). Heartbeat
// timers restart, so no worker is expired because the leader changed.
//
// An app whose client has not answered is not ended here: its workers may
// well have reported its executors running, and a client that reconnects
// within its lease finds them still there. It stays UNKNOWN (it gets no
// new executors) until its client answers, or until --app-timeout passes
// with no sign of it (expireApps), like any app whose client went away.
func (c *core) completeRecovery() {
	c.status = wire.MasterCompletingRecovery
	gen := c.gen
	pending := 1 // released below, once everything is issued
	removed := func(error) {
		if pending--; pending == 0 && gen == c.gen {
			c.recoveryCompleted()
		}
	}
	for _, w := range slices.Clone(c.sortedWorkerList()) { // a copy: removals edit the list
		if w.state == wire.WorkerUnknown {
			pending++
			c.removeWorker(w, "did not answer the new leader within the recovery timeout", removed)
		}
	}
	for _, d := range sortedDrivers(c.drivers) {
		if d.worker == nil && d.state == wire.DriverUnknown {
			c.driverLost(d, "no worker claimed it after the master changed", nil)
		}
	}
	removed(nil)
}

// recoveryCompleted starts the ALIVE leadership once the silent workers'
// removals are done: their executors are LOST by then, so the snapshot each
// app's client gets lists exactly what runs.
func (c *core) recoveryCompleted() {
	unknownApps := 0
	for _, a := range c.appOrder {
		switch {
		case a.state == wire.AppUnknown:
			unknownApps++
		case a.state == wire.AppWaiting && len(a.executors) > 0:
			a.state = wire.AppRunning
		}
	}
	c.rearm(c.now())
	c.status = wire.MasterAlive
	c.metrics.recovery.Set(c.now().Sub(c.leaderSince).Seconds())
	for _, a := range c.appOrder {
		c.publish(a, wire.AppEvent{Type: wire.EventSnapshot, App: appStatus(a)})
	}
	c.log.Info("recovery complete; leader ALIVE", "epoch", c.epoch, "workers", len(c.aliveWorkers()), "apps", len(c.apps),
		"appsAwaitingClient", unknownApps)
	c.schedule()
}
