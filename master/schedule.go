package master

import (
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// runSchedule schedules if an event asked for it (see core.schedule).
func (c *core) runSchedule() {
	if c.needSchedule {
		c.needSchedule = false
		c.scheduleNow()
	}
}

// scheduleNow runs one scheduling round: the index is brought up to date
// (syncIndex), the scheduler decides on a view of the state
// (scheduler.Schedule), and the plan is applied here with the
// commit-first writes. Only an ALIVE leader schedules: during recovery
// the master does not yet know what runs where.
func (c *core) scheduleNow() {
	defer c.metrics.timeRound(time.Now())
	if c.status != wire.MasterAlive {
		return
	}
	c.syncIndex()
	c.apply(scheduler.Schedule(c.schedulingView()))
}

// apply carries out a plan, in the order the round decided it: drivers,
// executor id reservations, launches, then preemptions; then keeps what
// the round found (the queues' status, the apps' clocks, gang holds).
func (c *core) apply(p scheduler.Plan) {
	if p.Outcome == scheduler.Idle {
		return
	}
	c.round.driverCursor = p.DriverCursor
	for _, dp := range p.Drivers {
		d, w := c.drivers[dp.DriverID], c.workers[dp.WorkerID]
		c.launchDriver(w, d, w.grantsOf(dp.Resources, d.spec.Resources), dp.Ports)
	}
	for _, r := range p.Reservations {
		c.reserveExecutorIDs(c.apps[r.AppID], r.Need)
	}
	for _, g := range p.UnplacedGangs {
		c.log.Debug("gang not placed whole this round", "app", g.AppID, "gang", g.Gang, "placeable", g.Placeable)
	}
	for _, l := range p.Launches {
		a, w := c.apps[l.AppID], c.workers[l.WorkerID]
		c.launchExecutor(a, w, l.Cores, l.MemoryMB, w.grantsOf(l.Resources, a.spec.Resources), l.Ports)
	}
	for id, next := range p.PortCursors {
		c.workers[id].ports.SetNext(next)
	}
	c.keepRound(p)
	c.resendPreemptions()
	for _, pr := range p.Preemptions {
		c.preempt(c.apps[pr.AppID].executors[pr.ExecutorID], pr.Why, pr.For)
	}
}

// keepRound keeps what a round found: each queue's status and starvation
// clock, the apps' clocks, who is held back for a gang, whether anyone is
// owed capacity.
func (c *core) keepRound(p scheduler.Plan) {
	for name, o := range p.Queues {
		if q := c.queues[name]; q != nil {
			q.view, q.starvedSince = o, o.StarvedSince
		}
	}
	for id, k := range p.Apps {
		if a := c.apps[id]; a != nil {
			a.waitingSince, a.gangWaitingSince, a.gangRestarting = k.WaitingSince, k.GangWaitingSince, k.GangRestarting
		}
	}
	if p.GangHoldsDecided {
		c.round.heldForGang = p.GangHolds
	}
	c.round.roomHolds = p.Holds
	c.round.owing = p.Owing
}

// reserveExecutorIDs writes a larger reservation of a's executor ids
// (need plus a block, so that steady growth costs few writes), whose
// outcome schedules again.
func (c *core) reserveExecutorIDs(a *appInfo, need int) {
	want := min(a.nextExecID+need+executorIDBlock, maxExecutorID)
	c.updateApp(a, 0, func(rec *persistence.AppRecord) {
		rec.ExecutorIDsReserved = max(rec.ExecutorIDsReserved, want)
	}, func() {}, c.logPersistFailure("reserve executor ids of "+a.rec.ID))
}
