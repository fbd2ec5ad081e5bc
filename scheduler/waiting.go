package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/placement"
)

// Anything that waits says why, so that its user knows whether to wait or
// to change the request: a driver asking for 64 cores on a cluster whose
// largest worker has 2 used to sit SUBMITTED with an empty message. The
// reasons are worked out when a status is read, against the room (Rooms:
// one pass over the workers, cached until a worker changes, so never
// stale) and what the last round found of the queues; "never fits" (the
// request exceeds every worker) is told apart from "not now" (the room is
// taken).

// StatusView is what a status read judges waiting reasons against.
type StatusView struct {
	Now      time.Time
	Config   Config
	Fleet    Fleet
	Capacity Capacity
	Rooms    *Rooms
	// Alive: the master is ALIVE (not recovering its workers).
	Alive         bool
	PlacedDrivers int              // drivers on a worker
	Queues        map[string]Queue // by name
	// GangHolds is the apps the last round held back for a gang (app id →
	// the gang's app id).
	GangHolds map[string]string
}

// AppWaiting says why an active app without executors has none, or why
// one that has some gets no more while it wants more cores: its executor
// limit (dynamic allocation) holds it there; "" when it waits for nothing.
func (v *StatusView) AppWaiting(a *App) string {
	r := v.Rooms.Of(v.Fleet, a.Constraints)
	coresLeft := a.CoresLeft(a.CoresGranted)
	step := placement.ExecutorStep(a.Cores, v.Config.MinCoreUnit, coresLeft)
	switch {
	case a.Finished || a.Ending:
		return ""
	case a.Executors > a.ExecutorLimit:
		// The limit was lowered under what runs: nothing is killed for it.
		n, limit := a.Executors, a.ExecutorLimit
		return fmt.Sprintf("over its executor limit (%d): %d executors run; the %d beyond it run on until they end or are killed (its client's kill-executors, berth app kill-executors); none new starts until fewer than %d run",
			limit, n, n-limit, limit)
	case a.Executors > 0:
		if coresLeft <= 0 {
			return ""
		}
		if a.Executors < a.ExecutorLimit {
			if why := v.portsReason("an executor", a.Ports); why != "" {
				return why
			}
			if r.among != "" { // the workers it may use are full
				if why := r.fitReason("an executor", step, a.MemoryMB); why != "" {
					return why
				}
			}
			return v.queueWaiting(a.Queue)
		}
		if a.MaxCores == placement.Unlimited {
			return fmt.Sprintf("waiting: executor limit reached (%d); more cores wanted", a.ExecutorLimit)
		}
		return fmt.Sprintf("waiting: executor limit reached (%d); %d more cores wanted", a.ExecutorLimit, coresLeft)
	case a.Unknown:
		return "waiting: for its client to reconnect to this leader"
	case !v.Alive:
		return "waiting: the master is recovering its workers"
	case coresLeft <= 0:
		return ""
	case a.ExecutorLimit <= 0:
		// A client that starts at no executor (Spark's dynamic
		// allocation) learns at once that none could ever start.
		if why := r.fitReason("an executor", step, a.MemoryMB); strings.HasPrefix(why, "cannot start") {
			return why
		}
		return "waiting: executor limit reached (0)"
	case a.backingOff(v.Now):
		return fmt.Sprintf("waiting: its executors kept ending soon after starting; next try in %s", a.BackoffUntil.Sub(v.Now).Round(100*time.Millisecond))
	case a.Gang > 0 && (a.Executors == 0 || a.GangRestarting):
		if why := r.fitReason("an executor", a.Cores, a.MemoryMB); strings.HasPrefix(why, "cannot start") {
			return why
		}
		return v.gangWaiting(a)
	case v.GangHolds[a.ID] != "":
		return fmt.Sprintf("waiting: capacity is held for gang app %s, which has waited longer than --gang-reserve-after", v.GangHolds[a.ID])
	}
	if a.Cores == 0 {
		if r.alive > 0 && step > r.maxCores {
			return fmt.Sprintf("cannot start: the core unit %d fits on no worker (largest: %d cores); lower --min-core-unit or add a larger worker", step, r.maxCores)
		}
	}
	// What can never fit first, then what its queue holds it to, then
	// what is taken.
	why := r.fitReason("an executor", step, a.MemoryMB)
	if why == "" {
		// Room, but no worker with the ports it asks for: not its
		// queue's doing.
		why = v.portsReason("an executor", a.Ports)
	}
	// A constrained app short of room among the workers it may use waits
	// for them, whatever its queue says.
	if !strings.HasPrefix(why, "cannot start") && !strings.Contains(why, "--port-range") && (why == "" || r.among == "") {
		if q := v.queueWaiting(a.Queue); q != "" {
			return q
		}
	}
	if why == "" {
		why = v.resourceReason("an executor", &a.Spec)
	}
	if x := v.exclusionReason(a); x != "" {
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
func (v *StatusView) exclusionReason(a *App) string {
	if len(a.Excluded) == 0 || !Excluding(v.Fleet, a, v.Now) {
		return ""
	}
	ids := slices.Sorted(maps.Keys(a.Excluded))
	x := a.Excluded[ids[0]]
	more := ""
	if len(ids) > 1 {
		more = fmt.Sprintf(" and %d more", len(ids)-1)
	}
	return fmt.Sprintf("its executors are kept off worker %s%s until %s (%s; berth worker clear %s ends it)",
		ids[0], more, x.Until.Format(time.TimeOnly), x.Reason, ids[0])
}

// resourceReason says why a process of s does not start for want of its
// custom resources ("" when some placeable worker has them free): no
// worker offers that much at all, or what there is is taken.
func (v *StatusView) resourceReason(what string, s *Spec) string {
	if len(s.Resources) == 0 {
		return ""
	}
	offered := false
	for w := range v.Fleet.Workers() {
		if !w.Placeable() {
			continue
		}
		if placement.ResourceFit(v.Fleet.ResourcesFree(w.ID), s.Resources) >= 1 {
			return ""
		}
		if placement.ResourceFit(v.Fleet.ResourcesOffered(w.ID), s.Resources) >= 1 {
			offered = true
		}
	}
	if !offered {
		return fmt.Sprintf("cannot start: no worker offers %s for %s; start a worker with --resource", s.Asked, what)
	}
	return fmt.Sprintf("waiting: no worker has %s free for %s", s.Asked, what)
}

// portsReason says why a process asking for labels cannot be placed for
// want of ports on any placeable worker, or "" when one has enough.
func (v *StatusView) portsReason(what string, labels []string) string {
	if len(labels) == 0 {
		return ""
	}
	most := 0
	for w := range v.Fleet.Workers() {
		if !w.Placeable() {
			continue
		}
		most = max(most, w.Ports.Free())
		if most >= len(labels) {
			return ""
		}
	}
	return fmt.Sprintf("waiting: no worker has %d free ports in its --port-range for %s (most free: %d)", len(labels), what, most)
}

// DriverWaiting says why a submitted driver has not started, or "".
func (v *StatusView) DriverWaiting(d *Driver) string {
	switch {
	case !d.Waiting:
		return ""
	case !v.Alive:
		return "waiting: the master is recovering its workers"
	case v.Config.MaxDrivers > 0 && v.PlacedDrivers >= v.Config.MaxDrivers:
		return fmt.Sprintf("waiting: %d drivers run, the most --max-drivers allows", v.Config.MaxDrivers)
	}
	if q, ok := v.Queues[d.Queue]; ok {
		if why := driverOverLimit(&q, d); why != "" {
			return why
		}
	}
	if why := v.Rooms.Of(v.Fleet, d.Constraints).fitReason("the driver", d.Cores, d.MemoryMB); why != "" {
		return why
	}
	return v.resourceReason("the driver", &d.Spec)
}

// queueWaiting says why the apps of queue name got nothing more in the
// last round, if their queue held them: its limit, or its fair share
// while others are owed theirs; and what is being reclaimed for it.
func (v *StatusView) queueWaiting(name string) string {
	q, ok := v.Queues[name]
	switch {
	case !ok:
		return ""
	case q.Last.Reclaiming != "":
		return fmt.Sprintf("waiting for fair share (queue %s): %s", q.Name, q.Last.Reclaiming)
	case q.Last.Held != "":
		return "waiting: " + q.Last.Held
	}
	return ""
}

// driverOverLimit says why d waits for its queue's limit: it asks more
// than the limit itself, or than the limit leaves beside what the queue
// holds; "" when the limit does not hold it.
func driverOverLimit(q *Queue, d *Driver) string {
	if q.Limit == nil {
		return ""
	}
	l, used := *q.Limit, q.Last.Usage
	type dim struct {
		name             string
		ask, limit, used float64
	}
	dims := []dim{{"cores", float64(d.Cores), float64(l.Cores), float64(used.Cores)},
		{"memory MB", float64(d.MemoryMB), float64(l.MemoryMB), float64(used.MemoryMB)}}
	// By name: the first dimension over its limit is the one told, and
	// the same driver must be told the same reason every time it is read.
	for _, r := range slices.Sorted(maps.Keys(d.Asked)) {
		if lim, ok := l.Resources[r]; ok {
			dims = append(dims, dim{r, d.Asked[r], lim, used.Resources[r]})
		}
	}
	for _, x := range dims {
		switch {
		case x.limit <= 0:
		case x.ask > x.limit:
			return fmt.Sprintf("cannot start: the driver asks %g %s, more than queue %s's limit (%g)", x.ask, x.name, q.Name, x.limit)
		case x.used+x.ask > x.limit:
			return fmt.Sprintf("waiting: queue %s at its limit (%s %g, %g in use): the driver asks %g", q.Name, x.name, x.limit, x.used, x.ask)
		}
	}
	return ""
}
