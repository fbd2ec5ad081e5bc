package scheduler

import (
	"slices"
	"time"

	"github.com/berth-cluster/berth/placement"
)

// Schedule decides one round: it places waiting drivers, then executors by
// the queues' fair shares (fairshare.go), then takes back what a queue is
// owed if it has waited long enough (preempt.go). It leaves the view as it
// found it: the round's passes take their placements off the view's index
// under a checkpoint (each pass sees what the passes before it took), and
// the index is rolled back before Schedule returns.
func Schedule(v *View) Plan {
	v.Index.Checkpoint()
	defer v.Index.Rollback()
	r := newRound(v)
	if len(v.WaitingDrivers) == 0 && !r.appsWantCores() {
		r.settle()
		return r.plan
	}
	if v.Index.Len() == 0 {
		return Plan{Outcome: Idle}
	}
	r.holds = r.liveHolds()
	rnd := r.newShareRound()
	if len(v.WaitingDrivers) > 0 {
		r.placeDrivers(rnd)
	}
	r.placeExecutors(rnd)
	r.record(rnd)
	r.reclaim(rnd)
	r.plan.Outcome = Scheduled
	r.keepClocks()
	return r.plan
}

// round is one Schedule's working state: the view, and what the round has
// taken so far of each app and worker it touched.
type round struct {
	v       *View
	now     time.Time
	cfg     Config
	apps    []*app // the view's apps, in registration order
	appByID map[string]*app
	queues  map[string]*Queue
	used    map[string]*workerUse // the workers the round took room on
	holds   map[string]RoomHold   // the view's holds still in force
	plan    Plan
}

func newRound(v *View) *round {
	r := &round{v: v, now: v.Now, cfg: v.Config, apps: make([]*app, len(v.Apps)),
		queues: make(map[string]*Queue, len(v.Queues)), used: map[string]*workerUse{}, plan: Plan{DriverCursor: v.DriverCursor}}
	// The apps' working state: one allocation, kept from round to round
	// when the view brings Buffers (a round over a thousand apps
	// allocated 300 KB for it).
	buf := v.Buffers
	if buf == nil {
		buf = &Buffers{}
	}
	clear(buf.apps)
	buf.apps = slices.Grow(buf.apps[:0], len(v.Apps))[:len(v.Apps)]
	if buf.appByID == nil {
		buf.appByID = make(map[string]*app, len(v.Apps))
	}
	clear(buf.appByID)
	r.appByID = buf.appByID
	for i := range v.Apps {
		buf.apps[i] = newApp(&v.Apps[i], i)
		r.apps[i], r.appByID[v.Apps[i].ID] = &buf.apps[i], &buf.apps[i]
	}
	for i := range v.Queues {
		r.queues[v.Queues[i].Name] = &v.Queues[i]
	}
	return r
}

// settle is a round where nothing waits: no queue is owed anything, and
// each queue's outcome is what it holds now.
func (r *round) settle() {
	r.plan.Outcome = Settled
	rnd := r.newShareRound()
	r.record(rnd)
	for name, q := range r.plan.Queues {
		q.Held, q.Reclaiming, q.StarvedSince = "", "", time.Time{}
		r.plan.Queues[name] = q
	}
}

// appsWantCores reports whether any app could use more executors.
func (r *round) appsWantCores() bool {
	for _, a := range r.apps {
		if a.wants() && !a.backingOff(r.now) && a.held < a.ExecutorLimit {
			return true
		}
	}
	return false
}

// keepClocks puts in the plan the apps' clocks the round changed.
func (r *round) keepClocks() {
	for _, a := range r.apps {
		if a.clocks != a.App.clocks() {
			if r.plan.Apps == nil {
				r.plan.Apps = map[string]AppClocks{}
			}
			r.plan.Apps[a.ID] = a.clocks
		}
	}
}

// app is an app of the view with what the round gave it so far.
type app struct {
	*App
	order int // its place in registration order
	// granted, held and ids are its cores, executors and executor ids
	// left, from the view's, as the round's launches leave them.
	granted, held, ids int
	placed             int // executors the round launched for it
	clocks             AppClocks
}

func newApp(a *App, order int) app {
	return app{App: a, order: order, granted: a.CoresGranted, held: a.Executors, ids: a.IDsLeft, clocks: a.clocks()}
}

func (a *App) clocks() AppClocks {
	return AppClocks{WaitingSince: a.WaitingSince, GangWaitingSince: a.GangWaitingSince, GangRestarting: a.GangRestarting}
}

func (a *app) coresLeft() int { return a.CoresLeft(a.granted) }

// wants reports whether a may get executors: its client has answered this
// leader, it is not ending, and it has cores left to get.
func (a *app) wants() bool { return a.Eligible && a.coresLeft() > 0 }

// gangForming reports whether a's gang has yet to be placed (again): it
// asks a gang and holds no executor.
func (a *app) gangForming() bool { return a.Gang > 0 && a.held == 0 }

// step is the fewest cores a's next executor takes.
func (a *app) step(unit int) int { return placement.ExecutorStep(a.Cores, unit, a.coresLeft()) }

// launched counts a launch of a.
func (a *app) launched(cores int) {
	a.granted += cores
	a.held++
	a.ids--
	a.placed++
}

// workerUse is a worker the round took room on: what it had, and what the
// round's drivers took, the addresses and ports its launches took (their
// cores and memory are counted from the plan's launches where needed).
type workerUse struct {
	Worker
	cores, memory int
	res           map[string][]int // free after the round's picks; nil until the first
	ports         *PortPool        // a copy, once the round takes a port
}

// worker is worker id as the round leaves it.
func (r *round) worker(id string) (*workerUse, bool) {
	if u, ok := r.used[id]; ok {
		return u, true
	}
	w, ok := r.v.Fleet.Worker(id)
	if !ok {
		return nil, false
	}
	return r.use(w), true
}

// use is w as the round leaves it.
func (r *round) use(w Worker) *workerUse {
	if u, ok := r.used[w.ID]; ok {
		return u
	}
	u := &workerUse{Worker: w}
	r.used[w.ID] = u
	return u
}

func (u *workerUse) coresFree() int  { return u.CoresFree - u.cores }
func (u *workerUse) memoryFree() int { return u.MemoryFreeMB - u.memory }
func (u *workerUse) freePorts() int {
	if u.ports != nil {
		return u.ports.Free()
	}
	return u.Ports.Free()
}

// resourcesFree is what is free of each resource after the round's picks.
func (r *round) resourcesFree(u *workerUse) map[string][]int {
	if u.res == nil && u.Resources {
		u.res = r.v.Fleet.ResourcesFree(u.ID)
	}
	return u.res
}

// take takes a process's room on u: cores, memory and the addresses picked
// (each takes want of it, or a whole one).
func (r *round) take(u *workerUse, cores, memory int, picked map[string][]int, want map[string]int) {
	u.cores += cores
	u.memory += memory
	if len(picked) == 0 {
		return
	}
	free := r.resourcesFree(u)
	for name, idx := range picked {
		for _, i := range idx {
			free[name][i] -= min(want[name], placement.Whole)
		}
	}
}

// takePorts gives each label a port of u's, or nothing (false) if too few
// are free.
func (r *round) takePorts(u *workerUse, labels []string) (map[string]int, bool) {
	if len(labels) == 0 {
		return nil, true
	}
	if u.ports == nil {
		u.ports = u.Ports.Clone()
	}
	ports, ok := u.ports.Take(labels)
	if ok {
		if r.plan.PortCursors == nil {
			r.plan.PortCursors = map[string]int{}
		}
		r.plan.PortCursors[u.ID] = u.ports.Next()
	}
	return ports, ok
}
