package master

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/share"
	"github.com/berth-cluster/berth/wire"
)

// runSchedule schedules if an event asked for it (see core.schedule).
func (c *core) runSchedule() {
	if c.needSchedule {
		c.needSchedule = false
		c.scheduleNow()
	}
}

// scheduleNow places waiting drivers, then executors, by the queues'
// fair shares (fairshare.go), then takes back what a queue is owed if it
// has waited long enough (preempt.go). Only an ALIVE leader schedules:
// during recovery the master does not yet know what runs where.
func (c *core) scheduleNow() {
	defer c.metrics.timeRound(time.Now())
	if c.status != wire.MasterAlive {
		return
	}
	c.syncIndex()
	if len(c.waitingDrivers) == 0 && !c.appsWantCores() {
		c.settleQueues()
		return
	}
	if c.index.Len() == 0 {
		return
	}
	rnd := c.newShareRound()
	if len(c.waitingDrivers) > 0 {
		c.scheduleDrivers(c.aliveWorkers(), rnd)
		c.syncIndex()
	}
	c.scheduleExecutors(rnd)
	rnd.record()
	c.reclaim(rnd)
}

// scheduleDrivers gives each waiting driver, by priority then first come
// first served, the next worker round the ring that has room
// (spark.deploy.spreadOutDrivers): drivers spread over the workers instead
// of piling onto the first. A driver whose queue is at its limit waits.
//
// With --max-drivers N, no more than N drivers run (or are being launched)
// at once (spark.deploy.maxDrivers): drivers that take every core leave
// their own apps none and wait on them for ever (SPARK-27750).
func (c *core) scheduleDrivers(alive []*workerInfo, rnd *shareRound) {
	placed := c.placedDrivers()
	waiting := slices.Clone(c.waitingDrivers)
	slices.SortStableFunc(waiting, func(a, b *driverInfo) int { return cmp.Compare(b.rec.Desc.Priority, a.rec.Desc.Priority) })
	for _, d := range waiting {
		if c.cfg.MaxDrivers > 0 && placed >= c.cfg.MaxDrivers {
			return
		}
		if d.ending != nil || d.writes.busy {
			continue // being killed: decided when that write is done
		}
		want := milli(d.rec.Desc.Resources)
		qr := rnd.queues[queueName(d.rec.Desc.Queue)]
		use := rnd.vec(d.rec.Desc.Cores, d.rec.Desc.MemoryMB, want, 1)
		if qr == nil || !qr.usage.Add(use).Fits(qr.limit) {
			continue // its queue is at its limit
		}
		for range len(alive) {
			w := alive[c.driverCursor%len(alive)]
			c.driverCursor++
			if w.coresFree() < d.rec.Desc.Cores || w.memoryFree() < d.rec.Desc.MemoryMB || !wire.Satisfies(w.rec.Labels, d.rec.Desc.Constraints) {
				continue
			}
			picked, ok := placement.PickResources(w.resourcesFree(), want)
			if !ok || w.ports.free() < len(d.rec.Desc.Ports) {
				continue
			}
			ports, _ := w.ports.take(d.rec.Desc.Ports)
			c.launchDriver(w, d, w.grantsOf(picked, want), ports)
			qr.usage = qr.usage.Add(use)
			placed++
			break
		}
	}
}

// candidate is an app that wants executors this round.
type candidate struct {
	a     *appInfo
	need  int       // executors it could start
	one   share.Vec // what one executor takes
	qr    *queueRound
	order int // its place in registration order
}

// scheduleExecutors runs the fair-share round (fairshare.go) and launches
// what it decides. The workers are the index's (placement.Index, kept up
// to date by syncIndex): a round costs in proportion to the apps and what
// they get, not to the cluster's size.
func (c *core) scheduleExecutors(rnd *shareRound) {
	alive, coresFree := c.index.Len(), c.index.CoresFree()
	var cands []candidate
	for i, a := range c.appOrder {
		if !wantsCores(a) || c.backingOff(a) || a.gangHeld() {
			continue
		}
		// Never hand out more executor ids than are reserved. An app that
		// could start more executors than it has ids for waits for a larger
		// reservation (one write) rather than get a layout cut short.
		// What it wants of the cluster, free or not (its queue's demand,
		// what preemption may take back for it), and what it could start
		// now.
		want := executorsWanted(a, alive, c.capacity.cores)
		need := executorsWanted(a, alive, coresFree)
		if want == 0 || need > 0 && !c.ensureExecutorIDs(a, need) {
			continue
		}
		qr := rnd.queues[queueName(a.rec.Desc.Queue)]
		if qr == nil {
			continue
		}
		one, _, cores := rnd.shape(a, c.capacity.cores)
		demand := one.Scale(float64(want))
		demand[0] = float64(min(want*cores, a.coresLeft(), c.capacity.cores))
		qr.want = qr.want.Add(demand)
		qr.wanted += want
		cands = append(cands, candidate{a: a, need: want, one: one, qr: qr, order: i})
	}
	if len(cands) == 0 {
		return
	}
	rnd.fairShares()
	rank := map[*queueRound]int{}
	for i, qr := range rnd.order() {
		rank[qr] = i
	}
	slices.SortFunc(cands, func(x, y candidate) int {
		return cmp.Or(cmp.Compare(rank[x.qr], rank[y.qr]), cmp.Compare(y.a.rec.Desc.Priority, x.a.rec.Desc.Priority), cmp.Compare(x.order, y.order))
	})
	rnd.cands = slices.Clone(cands)
	position := map[*appInfo]int{}
	for i, a := range c.appOrder {
		position[a] = i
	}
	cands = c.holdForGang(rnd, cands, func(x, y *appInfo) bool {
		qx, qy := rnd.queues[queueName(x.rec.Desc.Queue)], rnd.queues[queueName(y.rec.Desc.Queue)]
		return cmp.Or(cmp.Compare(rank[qx], rank[qy]), cmp.Compare(y.rec.Desc.Priority, x.rec.Desc.Priority), cmp.Compare(position[x], position[y])) < 0
	})
	// Pass 1: each queue up to what it is owed.
	c.placeRound(rnd, cands, func(cd candidate) (share.Vec, bool) { return cd.qr.left, true })
	// Pass 2: what is left, to whoever still wants it, up to the limits.
	if c.index.CoresFree() > 0 {
		slices.SortStableFunc(cands, func(x, y candidate) int {
			return cmp.Compare(share.DominantShare(x.qr.usage, rnd.capacity)/x.qr.q.rec.Weight, share.DominantShare(y.qr.usage, rnd.capacity)/y.qr.q.rec.Weight)
		})
		c.placeRound(rnd, cands, func(cd candidate) (share.Vec, bool) { return cd.qr.limit.Sub(cd.qr.usage), false })
	}
}

// placeRound places cands in their order, each app capped by what room
// says its queue may still take (owed: pass 1, whose caps are then
// spent), and launches what the index decides.
func (c *core) placeRound(rnd *shareRound, cands []candidate, room func(candidate) (share.Vec, bool)) {
	alive, coresFree := c.index.Len(), c.index.CoresFree()
	var apps []placement.App
	byID := map[string]candidate{}
	for _, cd := range cands {
		a := cd.a
		if !wantsCores(a) {
			continue
		}
		need := min(executorsWanted(a, alive, coresFree), max(a.rec.ExecutorIDsReserved-a.nextExecID, 0))
		left, spend := room(cd)
		unit := slices.Clone(cd.one)
		if a.rec.Desc.CoresPerExecutor == 0 {
			unit[0] = 0 // cores capped apart, below
		}
		k := min(need, allowed(left, unit))
		if spend && k < need {
			cd.qr.capped = true
		}
		coresCap := a.coresLeft()
		if a.rec.Desc.CoresPerExecutor == 0 && !math.IsInf(left[0], 1) {
			// (An unbounded room, pass 2's without a limit, caps nothing:
			// converted to an int it was negative, and an app of no fixed
			// size was left beside the cores it could have had.)
			coresCap = min(coresCap, int(math.Ceil(math.Max(left[0], 0)-1e-9)))
			if step := min(placement.CoreUnit(c.cfg.MinCoreUnit), a.coresLeft()); coresCap > 0 && coresCap < step {
				// Rounded up to one step, as a fixed size is to one
				// executor: the cap must not make an executor smaller
				// than the core unit.
				coresCap = step
			}
		}
		if k <= 0 || coresCap <= 0 || (a.gangForming() && k < a.rec.Desc.Gang) {
			continue // a gang this pass cannot hold whole takes nothing
		}
		if spend {
			taken := cd.one.Scale(float64(k))
			if a.rec.Desc.CoresPerExecutor == 0 {
				taken[0] = float64(coresCap)
			}
			cd.qr.left = cd.qr.left.Sub(taken).Max(share.Zero(len(taken)))
		}
		apps = append(apps, placement.App{
			ID:                  a.rec.ID,
			CoresLeft:           coresCap,
			CoresPerExecutor:    a.rec.Desc.CoresPerExecutor,
			MemoryPerExecutorMB: a.rec.Desc.MemoryPerExecutorMB,
			ExecutorLimit:       min(a.executorLimit(), len(a.executors)+k),
			Executors:           len(a.executors),
			// Checked when registered; thousandths of an address.
			ResourcesPerExecutor: milli(a.rec.Desc.ResourcesPerExecutor),
			Fits:                 c.workersFor(a),
		})
		byID[a.rec.ID] = cd
	}
	if len(apps) == 0 {
		return
	}
	launches := c.index.Round(apps)
	gangPorts, dropped := c.wholeGangs(launches, byID)
	for i, l := range launches {
		a, w := c.apps[l.AppID], c.workers[l.WorkerID]
		if a == nil || w == nil || dropped[i] {
			c.dirty[l.WorkerID] = struct{}{} // not launched: the index took it; put the worker back
			continue
		}
		ports, ok := gangPorts[i], true
		if ports == nil {
			ports, ok = w.ports.take(a.rec.Desc.Ports)
		}
		if !ok {
			// The index does not count ports: one round may have given
			// this worker more executors than it has ports left.
			c.dirty[l.WorkerID] = struct{}{}
			continue
		}
		c.launchExecutor(a, w, l.Cores, l.MemoryMB, w.grantsOf(l.Resources, milli(a.rec.Desc.ResourcesPerExecutor)), ports)
		cd := byID[l.AppID]
		cd.qr.usage = cd.qr.usage.Add(rnd.vec(l.Cores, l.MemoryMB, milli(a.rec.Desc.ResourcesPerExecutor), 1))
		cd.qr.placed++
		rnd.placed[a]++
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

// workersFor is the placement filter of a's executors: the workers it is
// not excluded from (exclusions.go) that have the ports it asks for and
// labels that satisfy its constraints. nil when none applies (the common
// case costs nothing).
func (c *core) workersFor(a *appInfo) func(string) bool {
	ports, constraints := len(a.rec.Desc.Ports), a.rec.Desc.Constraints
	excluding := c.excluding(a)
	if !excluding && ports == 0 && len(constraints) == 0 {
		return nil
	}
	now := c.now()
	return func(id string) bool {
		w := c.workers[id]
		return w != nil && (!excluding || !a.excludes(id, now)) && w.ports.free() >= ports && wire.Satisfies(w.rec.Labels, constraints)
	}
}
