package master

import (
	"slices"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// What the scheduler decides on, built from the master's state as it is:
// the index and the fleet are the master's own (read through fleet), the
// apps, drivers and queues small structs of what the decisions read.

// schedulingView is the view of one scheduling round.
func (c *core) schedulingView() *scheduler.View {
	v := &scheduler.View{
		Now: c.now(), Config: c.schedulerConfig(), Index: c.index, Fleet: fleet{c}, Capacity: c.capacity.view(),
		Rooms: &c.workerViews.rooms, Buffers: &c.round.buffers, DriverCursor: c.round.driverCursor, Holds: c.round.roomHolds,
		Queues: make([]scheduler.Queue, 0, len(c.queues)),
	}
	// The apps' views are kept from round to round (a round over a
	// thousand apps allocated 300 KB for them): nothing keeps them past
	// the round.
	clear(c.round.apps)
	c.round.apps = slices.Grow(c.round.apps[:0], len(c.appOrder))[:len(c.appOrder)]
	v.Apps = c.round.apps
	for _, name := range sortedKeys(c.queues) {
		v.Queues = append(v.Queues, c.queueView(name))
	}
	for i, a := range c.appOrder {
		v.Apps[i] = a.view()
	}
	for _, d := range sortedDrivers(c.drivers) {
		if d.worker != nil {
			v.Drivers = append(v.Drivers, d.view())
		}
	}
	for _, d := range c.waitingDrivers {
		v.WaitingDrivers = append(v.WaitingDrivers, d.view())
	}
	return v
}

// statusView is what waiting reasons are judged against.
func (c *core) statusView() *scheduler.StatusView {
	queues := make(map[string]scheduler.Queue, len(c.queues))
	for name := range c.queues {
		queues[name] = c.queueView(name)
	}
	return &scheduler.StatusView{
		Now: c.now(), Config: c.schedulerConfig(), Fleet: fleet{c}, Capacity: c.capacity.view(), Rooms: &c.workerViews.rooms,
		Alive: c.status == wire.MasterAlive, PlacedDrivers: c.placedDrivers(), Queues: queues, GangHolds: c.round.heldForGang,
	}
}

func (c *core) schedulerConfig() scheduler.Config {
	return scheduler.Config{MinCoreUnit: c.cfg.MinCoreUnit, MaxDrivers: c.cfg.MaxDrivers,
		PreemptionDelay: c.cfg.PreemptionDelay, PreemptionGrace: c.cfg.PreemptionGrace, GangReserveAfter: c.cfg.GangReserveAfter}
}

// queueView is queue name as the scheduler sees it.
func (c *core) queueView(name string) scheduler.Queue {
	q := c.queues[name]
	return scheduler.Queue{Name: q.rec.Name, Weight: q.rec.Weight, Guarantee: q.rec.Guarantee, Limit: q.rec.Limit, Preempt: q.rec.Preempt,
		StarvedSince: q.starvedSince, Reclaiming: c.round.reclaiming[name], Last: q.view}
}

// view is a as the scheduler sees it.
func (a *appInfo) view() scheduler.App {
	return scheduler.App{
		ID: a.rec.ID, AppSpec: a.spec,
		Eligible: a.eligible(), Unknown: a.state == wire.AppUnknown, Ending: a.ending != nil, Finished: a.state.Finished(),
		CoresGranted: a.coresGranted, Executors: len(a.executors), ExecutorLimit: a.executorLimit(),
		IDsLeft: a.rec.ExecutorIDsReserved - a.nextExecID, IDsBlocked: a.writes.busy || a.ending != nil,
		BackoffUntil: a.backoffUntil, WaitingSince: a.waitingSince, GangWaitingSince: a.gangWaitingSince, GangRestarting: a.gangRestarting,
		Excluded: a.excluded, LeavingCores: a.leavingCores, LeavingExecs: a.leavingExecs, History: executorHistory{a},
	}
}

// eligible reports whether a may get executors at all: its client has
// answered this leader and it is not ending.
func (a *appInfo) eligible() bool { return a.state != wire.AppUnknown && a.ending == nil }

// view is d as the scheduler sees it.
func (d *driverInfo) view() scheduler.Driver {
	return scheduler.Driver{ID: d.rec.ID, Spec: d.spec, Busy: d.ending != nil || d.writes.busy,
		Waiting: d.state == wire.DriverSubmitted && !d.launching && d.ending == nil}
}

// appWaiting says why a waits (scheduler.StatusView.AppWaiting).
func (c *core) appWaiting(a *appInfo, sv *scheduler.StatusView) string {
	v := a.view()
	return sv.AppWaiting(&v)
}

// driverWaiting says why d waits.
func (c *core) driverWaiting(d *driverInfo, sv *scheduler.StatusView) string {
	v := d.view()
	return sv.DriverWaiting(&v)
}

// placedDrivers counts the drivers on a worker: running, or being launched.
func (c *core) placedDrivers() int {
	n := 0
	for _, d := range c.drivers {
		if d.worker != nil {
			n++
		}
	}
	return n
}
