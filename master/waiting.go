package master

import (
	"fmt"
	"strings"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// Anything that waits says why, so that its user knows whether to wait or
// to change the request: a driver asking for 64 cores on a cluster whose
// largest worker has 2 used to sit SUBMITTED with an empty message. The
// reasons are worked out when a status is read, against the room (one pass
// over the workers, cached until a worker's capacity, use or state changes,
// so never stale); "never fits" (the request exceeds every worker) is told
// apart from "not now" (the room is taken).

// room summarises the schedulable workers: the largest of each quantity,
// not necessarily on one worker, and (sizes, free) what one worker holds
// of both (roomshapes.go).
type room struct {
	// among: "" for every worker; for a constrained app, its constraints
	// ("with gpu-model in [T4]"), and the room is that of the workers
	// that satisfy them.
	among               string
	alive               int // workers new work may go to
	diskFull            int // live workers whose disk is full
	unhealthy           int // live workers marked unhealthy (exclusions.go), disk not full
	maxCores, maxMemory int // largest worker
	maxFreeCores        int // most free cores on one worker
	maxFreeMemory       int // most free memory on one worker
	sizes, free         *sizes
}

func (c *core) room() room {
	if c.workerViews.room != nil {
		return *c.workerViews.room
	}
	r := c.computeRoom()
	c.workerViews.room = &r
	return r
}

// roomFor is the room of the workers that satisfy cs (cached as room is,
// by the constraints' text).
func (c *core) roomFor(cs []wire.Constraint) room {
	if len(cs) == 0 {
		return c.room()
	}
	parts := make([]string, len(cs))
	for i, x := range cs {
		parts[i] = x.String()
	}
	among := "with " + strings.Join(parts, " and ")
	if r, ok := c.workerViews.constrained[among]; ok {
		return r
	}
	r := c.computeRoomWhere(func(w *workerInfo) bool { return wire.Satisfies(w.rec.Labels, cs) })
	r.among = among
	if c.workerViews.constrained == nil {
		c.workerViews.constrained = map[string]room{}
	}
	c.workerViews.constrained[among] = r
	return r
}

func (c *core) computeRoom() room { return c.computeRoomWhere(nil) }

func (c *core) computeRoomWhere(ok func(*workerInfo) bool) room {
	r := room{sizes: &sizes{}, free: &sizes{}}
	for _, w := range c.sortedWorkerList() {
		if !w.schedulable() || (ok != nil && !ok(w)) {
			continue
		}
		if !w.placeable() {
			if w.diskFull != "" {
				r.diskFull++
			} else {
				r.unhealthy++
			}
			continue
		}
		r.alive++
		r.maxCores, r.maxMemory = max(r.maxCores, w.rec.Cores), max(r.maxMemory, w.rec.MemoryMB)
		r.maxFreeCores, r.maxFreeMemory = max(r.maxFreeCores, w.coresFree()), max(r.maxFreeMemory, w.memoryFree())
		r.sizes.add(w.rec.Cores, w.rec.MemoryMB)
		r.free.add(w.coresFree(), w.memoryFree())
	}
	return r
}

// fitReason says why a process of cores and memory does not start now ("" if
// a worker has the room), naming what asks (an executor, the driver).
func (r room) fitReason(what string, cores, memory int) string {
	switch {
	case r.alive == 0 && r.unhealthy > 0 && r.diskFull == 0:
		return fmt.Sprintf("waiting: every live worker %sis unhealthy (%d: processes of several apps failed there lately); berth status shows why, berth worker clear ID puts one back", r.with(), r.unhealthy)
	case r.alive == 0 && r.unhealthy > 0:
		return fmt.Sprintf("waiting: no live worker %stakes work: %d with a full disk, %d unhealthy; berth status shows why", r.with(), r.diskFull, r.unhealthy)
	case r.alive == 0 && r.diskFull > 0:
		return fmt.Sprintf("waiting: the disk of every live worker %sis full (%d); berth status shows why", r.with(), r.diskFull)
	case r.alive == 0 && r.among != "":
		return fmt.Sprintf("waiting: no live worker %s (berth status shows the workers' labels)", r.among)
	case r.alive == 0:
		return "waiting: no worker is alive"
	case !r.sizes.holds(cores, memory):
		return fmt.Sprintf("cannot start: no worker %shas %d cores and %d MB for %s (largest: %d cores, %d MB); ask for less or add a larger worker",
			r.with(), cores, memory, what, r.maxCores, r.maxMemory)
	case !r.free.holds(cores, memory):
		return fmt.Sprintf("waiting: no worker %shas %d free cores and %d MB free for %s (largest free: %d cores, %d MB)",
			r.with(), cores, memory, what, r.maxFreeCores, r.maxFreeMemory)
	}
	return ""
}

// with is the room's constraints for a sentence ("with gpu-model in [T4] "),
// or "".
func (r room) with() string {
	if r.among == "" {
		return ""
	}
	return r.among + " "
}

// appWaiting says why an active app without executors has none, or why
// one that has some gets no more while it wants more cores: its executor
// limit (dynamic allocation) holds it there.
func (c *core) appWaiting(a *appInfo, r room) string {
	if cs := a.rec.Desc.Constraints; len(cs) > 0 {
		r = c.roomFor(cs)
	}
	switch {
	case a.state.Finished() || a.ending != nil:
		return ""
	case len(a.executors) > a.executorLimit():
		// The limit was lowered under what runs: nothing is killed for it.
		n, limit := len(a.executors), a.executorLimit()
		return fmt.Sprintf("over its executor limit (%d): %d executors run; the %d beyond it run on until they end or are killed (its client's kill-executors, berth app kill-executors); none new starts until fewer than %d run",
			limit, n, n-limit, limit)
	case len(a.executors) > 0:
		if a.coresLeft() <= 0 {
			return ""
		}
		if len(a.executors) < a.executorLimit() {
			if why := c.portsReason("an executor", a.rec.Desc.Ports); why != "" {
				return why
			}
			if r.among != "" { // the workers it may use are full
				if why := r.fitReason("an executor", c.executorStep(a), a.rec.Desc.MemoryPerExecutorMB); why != "" {
					return why
				}
			}
			return c.queueWaiting(a.rec.Desc.Queue)
		}
		if a.maxCores() == placement.Unlimited {
			return fmt.Sprintf("waiting: executor limit reached (%d); more cores wanted", a.executorLimit())
		}
		return fmt.Sprintf("waiting: executor limit reached (%d); %d more cores wanted", a.executorLimit(), a.coresLeft())
	case a.state == wire.AppUnknown:
		return "waiting: for its client to reconnect to this leader"
	case c.status != wire.MasterAlive:
		return "waiting: the master is recovering its workers"
	case a.coresLeft() <= 0:
		return ""
	case a.executorLimit() <= 0:
		// A client that starts at no executor (Spark's dynamic
		// allocation) learns at once that none could ever start.
		if why := r.fitReason("an executor", c.executorStep(a), a.rec.Desc.MemoryPerExecutorMB); strings.HasPrefix(why, "cannot start") {
			return why
		}
		return "waiting: executor limit reached (0)"
	case c.backingOff(a):
		return fmt.Sprintf("waiting: its executors kept ending soon after starting; next try in %s", a.backoffUntil.Sub(c.now()).Round(100*time.Millisecond))
	case a.rec.Desc.Gang > 0 && (a.gangForming() || a.gangRestarting):
		if why := r.fitReason("an executor", a.rec.Desc.CoresPerExecutor, a.rec.Desc.MemoryPerExecutorMB); strings.HasPrefix(why, "cannot start") {
			return why
		}
		return c.gangWaiting(a)
	case c.heldForGang[a] != "":
		return fmt.Sprintf("waiting: capacity is held for gang app %s, which has waited longer than --gang-reserve-after", c.heldForGang[a])
	}
	step := c.executorStep(a)
	if a.rec.Desc.CoresPerExecutor == 0 {
		if r.alive > 0 && step > r.maxCores {
			return fmt.Sprintf("cannot start: the core unit %d fits on no worker (largest: %d cores); lower --min-core-unit or add a larger worker", step, r.maxCores)
		}
	}
	// What can never fit first, then what its queue holds it to, then
	// what is taken.
	why := r.fitReason("an executor", step, a.rec.Desc.MemoryPerExecutorMB)
	if why == "" {
		// Room, but no worker with the ports it asks for: not its
		// queue's doing.
		why = c.portsReason("an executor", a.rec.Desc.Ports)
	}
	// A constrained app short of room among the workers it may use waits
	// for them, whatever its queue says.
	if !strings.HasPrefix(why, "cannot start") && !strings.Contains(why, "--port-range") && (why == "" || r.among == "") {
		if q := c.queueWaiting(a.rec.Desc.Queue); q != "" {
			return q
		}
	}
	if why == "" {
		why = c.resourceReason("an executor", a.rec.Desc.ResourcesPerExecutor)
	}
	if x := c.exclusionReason(a); x != "" {
		// Room elsewhere, or not: the workers it is kept off are why too.
		if why == "" {
			return "waiting: " + x
		}
		return why + "; " + x
	}
	return why
}

// exclusionReason says which workers a's executors are kept off, and
// until when, or "".
func (c *core) exclusionReason(a *appInfo) string {
	list := a.exclusionList()
	if len(list) == 0 || !c.excluding(a) {
		return ""
	}
	x := list[0]
	more := ""
	if len(list) > 1 {
		more = fmt.Sprintf(" and %d more", len(list)-1)
	}
	return fmt.Sprintf("its executors are kept off worker %s%s until %s (%s; berth worker clear %s ends it)",
		x.WorkerID, more, x.Until.Format(time.TimeOnly), x.Reason, x.WorkerID)
}

// resourceReason says why a process asking want of custom resources does
// not start ("" when some alive worker has them free): no worker offers
// that much at all, or what there is is taken.
func (c *core) resourceReason(what string, want wire.ResourceAmounts) string {
	m := milli(want)
	if len(m) == 0 {
		return ""
	}
	offered := false
	for _, w := range c.aliveWorkers() {
		if placement.ResourceFit(w.resourcesFree(), m) >= 1 {
			return ""
		}
		if placement.ResourceFit((&workerInfo{rec: w.rec}).resourcesFree(), m) >= 1 {
			offered = true
		}
	}
	if !offered {
		return fmt.Sprintf("cannot start: no worker offers %s for %s; start a worker with --resource", want, what)
	}
	return fmt.Sprintf("waiting: no worker has %s free for %s", want, what)
}

// driverWaiting says why a submitted driver has not started.
func (c *core) driverWaiting(d *driverInfo, r room) string {
	if cs := d.rec.Desc.Constraints; len(cs) > 0 {
		r = c.roomFor(cs)
	}
	switch {
	case d.state != wire.DriverSubmitted || d.launching || d.ending != nil:
		return ""
	case c.status != wire.MasterAlive:
		return "waiting: the master is recovering its workers"
	case c.cfg.MaxDrivers > 0 && c.placedDrivers() >= c.cfg.MaxDrivers:
		return fmt.Sprintf("waiting: %d drivers run, the most --max-drivers allows", c.cfg.MaxDrivers)
	}
	if why := driverOverLimit(c.queueOf(d.rec.Desc.Queue), d); why != "" {
		return why
	}
	if why := r.fitReason("the driver", d.rec.Desc.Cores, d.rec.Desc.MemoryMB); why != "" {
		return why
	}
	return c.resourceReason("the driver", d.rec.Desc.Resources)
}

// queueWaiting says why the apps of queue name got nothing more in the
// last round, if their queue held them: its limit, or its fair share
// while others are owed theirs; and what is being reclaimed for it.
func (c *core) queueWaiting(name string) string {
	q := c.queueOf(name)
	switch {
	case q == nil:
		return ""
	case q.view.reclaiming != "":
		return fmt.Sprintf("waiting for fair share (queue %s): %s", q.rec.Name, q.view.reclaiming)
	case q.view.held != "":
		return "waiting: " + q.view.held
	}
	return ""
}

// driverOverLimit says why d waits for its queue's limit: it asks more
// than the limit itself, or than the limit leaves beside what the queue
// holds; "" when the limit does not hold it.
func driverOverLimit(q *queueInfo, d *driverInfo) string {
	if q == nil || q.rec.Limit == nil {
		return ""
	}
	l, used := *q.rec.Limit, q.view.usage
	type dim struct {
		name             string
		ask, limit, used float64
	}
	dims := []dim{{"cores", float64(d.rec.Desc.Cores), float64(l.Cores), float64(used.Cores)},
		{"memory MB", float64(d.rec.Desc.MemoryMB), float64(l.MemoryMB), float64(used.MemoryMB)}}
	for r, v := range d.rec.Desc.Resources {
		if lim, ok := l.Resources[r]; ok {
			dims = append(dims, dim{r, v, lim, used.Resources[r]})
		}
	}
	for _, x := range dims {
		switch {
		case x.limit <= 0:
		case x.ask > x.limit:
			return fmt.Sprintf("cannot start: the driver asks %g %s, more than queue %s's limit (%g)", x.ask, x.name, q.rec.Name, x.limit)
		case x.used+x.ask > x.limit:
			return fmt.Sprintf("waiting: queue %s at its limit (%s %g, %g in use): the driver asks %g", q.rec.Name, x.name, x.limit, x.used, x.ask)
		}
	}
	return ""
}

// executorStep is the fewest cores a's next executor takes: its fixed
// size, or the core unit (no more than it still wants).
func (c *core) executorStep(a *appInfo) int {
	if step := a.rec.Desc.CoresPerExecutor; step > 0 {
		return step
	}
	return min(placement.CoreUnit(c.cfg.MinCoreUnit), a.coresLeft())
}
