package master

import (
	"slices"

	"github.com/berth-cluster/berth/wire"
)

// A worker's latest state (after every registration): what it runs,
// reconciled with what the master knows, and during recovery adopted.

// workerLatestState reconciles what a worker runs with what the master
// knows. During recovery the master adopts the executors and drivers it
// knows the apps and drivers of; anything else the worker runs is killed
// (SPARK-13604), so nothing runs that no master accounts for.
func (c *core) workerLatestState(id string, report wire.WorkerLatestState) (wire.LatestStateReply, error) {
	if !c.leading() {
		return wire.LatestStateReply{}, c.notLeader()
	}
	w, ok := c.workers[id]
	if !ok || w.state == wire.WorkerDead || w.removing != nil {
		return wire.LatestStateReply{}, notFound("worker", id)
	}
	recovering := w.state == wire.WorkerUnknown
	var reply wire.LatestStateReply
	reported := map[execKey]bool{}
	for _, r := range report.Executors {
		reported[execKey{r.AppID, r.ExecutorID}] = true
		if !c.keepReportedExecutor(w, r, recovering) {
			c.fx.send(w, c.killExecutorCommand(r.AppID, r.ExecutorID))
			reply.KilledExecutors = append(reply.KilledExecutors, wire.ExecutorRef{AppID: r.AppID, ExecutorID: r.ExecutorID})
		}
	}
	if recovering {
		// What the worker had by the records but no longer runs ended while
		// no master listened. (Only now: outside recovery a launch may
		// still be on its way to the worker.)
		for k, e := range w.executors {
			if !reported[k] {
				c.executorLost(e, "not running on its worker after the master changed")
			}
		}
	}
	for _, r := range report.Drivers {
		if !c.keepReportedDriver(w, r) {
			c.fx.send(w, killDriverCommand(c.epoch, r.DriverID))
			reply.KilledDrivers = append(reply.KilledDrivers, r.DriverID)
		}
	}
	if recovering {
		c.requeueUnlaunchedDrivers(w)
		w.state, w.reregistered = drainState(w.rec), false
		c.touched(w)
		w.lastHeartbeat = c.now()
		c.log.Info("worker answered recovery", "worker", id, "executors", len(w.executors), "drivers", len(w.drivers))
		c.maybeCompleteRecovery()
	}
	c.schedule()
	return reply, nil
}

func (c *core) keepReportedExecutor(w *workerInfo, r wire.ExecutorReport, recovering bool) bool {
	a := c.apps[r.AppID]
	if r.State.Finished() {
		// An end no master acknowledged: apply it now; nothing to kill.
		if e := c.liveExecutor(a, r.ExecutorID); e != nil && e.worker == w && !e.launching {
			c.endExecutor(e, executorEnd{state: r.State, message: r.Message, exitCode: r.ExitCode, event: wire.EventExecutorUpdated, cause: r.Cause}, nil)
		}
		return true
	}
	if a == nil {
		return false
	}
	if e, ok := a.executors[r.ExecutorID]; ok {
		if e.worker == w && !e.launching {
			if r.State == wire.ExecutorRunning && e.state != wire.ExecutorRunning {
				e.runningSince = c.now()
			}
			e.state, e.health = r.State, r.Health
		}
		return e.worker == w && !e.launching
	}
	if !recovering || a.ending != nil || r.Cores <= 0 {
		return false
	}
	e := &executorInfo{app: a, id: r.ExecutorID, worker: w, cores: r.Cores, memory: r.MemoryMB, resources: r.Resources, state: r.State,
		ports: r.Ports, health: r.Health, started: c.now(), seq: c.nextSeq()}
	if r.State == wire.ExecutorRunning {
		e.runningSince = c.now()
	}
	a.adopt(e)
	a.hosts[w.rec.ID] = struct{}{}
	return true
}

func (c *core) keepReportedDriver(w *workerInfo, r wire.DriverReport) bool {
	d := c.drivers[r.DriverID]
	if r.State.Finished() {
		// An end no master acknowledged: apply it, if the driver was ours
		// and ran here (a recovered driver knows its worker from its
		// launch record); nothing to kill.
		if d != nil && !d.launching && (d.worker == w || (d.worker == nil && d.rec.WorkerID == w.rec.ID)) {
			if r.OutOfTouch {
				c.driverLost(d, r.Message, nil)
			} else {
				c.finishDriver(d, r.State, r.Message, r.ExitCode, nil)
			}
		}
		return true
	}
	if d == nil || d.launching || (d.worker != nil && d.worker != w) {
		return false
	}
	if d.worker == nil {
		c.waitingDrivers = slices.DeleteFunc(c.waitingDrivers, func(x *driverInfo) bool { return x == d })
		d.worker = w
		held, ports := d.rec.Resources, d.rec.Ports // as its launch record gave them
		if d.rec.WorkerID != w.rec.ID || held == nil {
			held = r.Resources
		}
		if d.rec.WorkerID != w.rec.ID || ports == nil {
			ports = r.Ports
		}
		d.ports, d.health = ports, r.Health
		w.addDriver(d, held)
	}
	d.state = wire.DriverRunning
	if d.rec.KillRequested {
		// Its kill was acknowledged under an earlier leader: finish it.
		c.fx.send(w, killDriverCommand(c.epoch, d.rec.ID))
	}
	return true
}

// requeueUnlaunchedDrivers puts back in the queue the drivers whose launch
// record names w's current process but which w does not run (nor report
// ended): the leader that wrote the record died before the launch reached
// the worker, so the driver never started, and waits again. A driver
// recorded on an earlier process of w was lost with it (driverLost, at
// the end of recovery).
func (c *core) requeueUnlaunchedDrivers(w *workerInfo) {
	if w.incarnation == "" {
		return
	}
	for _, d := range sortedDrivers(c.drivers) {
		if d.worker == nil && d.state == wire.DriverUnknown && d.rec.WorkerID == w.rec.ID && d.rec.WorkerIncarnation == w.incarnation {
			c.log.Info("driver's launch never reached its worker; it waits again", "driver", d.rec.ID, "worker", w.rec.ID)
			d.state = wire.DriverSubmitted
			c.waitingDrivers = append(c.waitingDrivers, d)
		}
	}
}

// liveExecutor is app a's live executor id, or nil.
func (c *core) liveExecutor(a *appInfo, id int) *executorInfo {
	if a == nil {
		return nil
	}
	return a.executors[id]
}
