package master

import (
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// runSchedule schedules if an event asked for it (see core.schedule).
func (c *core) runSchedule() {
	if c.needSchedule {
		c.needSchedule = false
		c.scheduleNow()
	}
}

// scheduleNow places waiting drivers, then executors. Only an ALIVE leader
// schedules: during recovery the master does not yet know what runs where.
func (c *core) scheduleNow() {
	defer c.metrics.timeRound(time.Now())
	if c.status != wire.MasterAlive || (len(c.waitingDrivers) == 0 && !c.appsWantCores()) {
		return
	}
	c.syncIndex()
	if c.index.Len() == 0 {
		return
	}
	if len(c.waitingDrivers) > 0 {
		c.scheduleDrivers(c.aliveWorkers())
		c.syncIndex()
	}
	c.scheduleExecutors()
}

// scheduleDrivers gives each waiting driver, first come first served, the
// next worker round the ring that has room (spark.deploy.spreadOutDrivers):
// drivers spread over the workers instead of piling onto the first.
//
// With --max-drivers N, no more than N drivers run (or are being launched)
// at once (spark.deploy.maxDrivers): drivers that take every core leave
// their own apps none and wait on them for ever (SPARK-27750).
func (c *core) scheduleDrivers(alive []*workerInfo) {
	placed := c.placedDrivers()
	for _, d := range append([]*driverInfo(nil), c.waitingDrivers...) {
		if c.cfg.MaxDrivers > 0 && placed >= c.cfg.MaxDrivers {
			return
		}
		if d.ending != nil || d.writes.busy {
			continue // being killed: decided when that write is done
		}
		for range len(alive) {
			w := alive[c.driverCursor%len(alive)]
			c.driverCursor++
			if w.coresFree() < d.rec.Desc.Cores || w.memoryFree() < d.rec.Desc.MemoryMB {
				continue
			}
			want := milli(d.rec.Desc.Resources)
			picked, ok := placement.PickResources(w.resourcesFree(), want)
			if !ok {
				continue
			}
			c.launchDriver(w, d, w.grantsOf(picked, want))
			placed++
			break
		}
	}
}

// scheduleExecutors runs one placement round over the apps that want cores,
// in registration order, and launches what it decides. The workers are the
// index's (placement.Index, kept up to date by syncIndex): a round costs in
// proportion to the apps and what they get, not to the cluster's size.
func (c *core) scheduleExecutors() {
	alive, coresFree := c.index.Len(), c.index.CoresFree()
	var apps []placement.App
	for _, a := range c.appOrder {
		if !wantsCores(a) || c.backingOff(a) {
			continue
		}
		// Never hand out more executor ids than are reserved. An app that
		// could start more executors than it has ids for waits for a larger
		// reservation (one write) rather than get a layout cut short.
		need := executorsWanted(a, alive, coresFree)
		if need == 0 || !c.ensureExecutorIDs(a, need) {
			continue
		}
		limit := min(a.executorLimit(), len(a.executors)+need)
		apps = append(apps, placement.App{
			ID:                  a.rec.ID,
			CoresLeft:           a.coresLeft(),
			CoresPerExecutor:    a.rec.Desc.CoresPerExecutor,
			MemoryPerExecutorMB: a.rec.Desc.MemoryPerExecutorMB,
			ExecutorLimit:       limit,
			Executors:           len(a.executors),
			// Checked when registered; thousandths of an address.
			ResourcesPerExecutor: milli(a.rec.Desc.ResourcesPerExecutor),
		})
	}
	if len(apps) == 0 {
		return
	}
	for _, l := range c.index.Round(apps) {
		a, w := c.apps[l.AppID], c.workers[l.WorkerID]
		if a != nil && w != nil {
			c.launchExecutor(a, w, l.Cores, l.MemoryMB, w.grantsOf(l.Resources, milli(a.rec.Desc.ResourcesPerExecutor)))
		} else {
			c.dirty[l.WorkerID] = struct{}{} // not launched: the index took it; put the worker back
		}
	}
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

// appsWantCores reports whether any app could use more executors.
func (c *core) appsWantCores() bool {
	for _, a := range c.appOrder {
		if wantsCores(a) && !c.backingOff(a) && len(a.executors) < a.executorLimit() {
			return true
		}
	}
	return false
}

// wantsCores reports whether a may get executors: its client has answered
// this leader, it is not ending, and it has cores left to get.
func wantsCores(a *appInfo) bool {
	return a.state != wire.AppUnknown && a.ending == nil && a.coresLeft() > 0
}

// executorsWanted bounds the executors one placement round could start for
// a: no more than its limit allows, than its cores left or the free cores
// could hold, and (without a fixed executor size) than one per worker. An
// app without maxCores would otherwise "want" billions.
func executorsWanted(a *appInfo, alive, coresFree int) int {
	n := max(a.executorLimit()-len(a.executors), 0)
	if per := a.rec.Desc.CoresPerExecutor; per > 0 {
		n = min(n, a.coresLeft()/per, coresFree/per)
	} else {
		n = min(n, a.coresLeft(), coresFree, alive)
	}
	return min(n, maxExecutorsPerPass)
}

// maxExecutorsPerPass bounds the executors one app starts in one pass.
const maxExecutorsPerPass = 1 << 16
