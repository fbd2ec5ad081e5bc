package master

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// The master's in-memory model. The durable part of each entity is its
// persistence record; the rest is rebuilt from reports after a failover.

type workerInfo struct {
	rec           persistence.WorkerRecord
	state         wire.WorkerState
	lastHeartbeat time.Time
	deadSince     time.Time
	// reregistered: an UNKNOWN worker (recovery) registered again; it turns
	// ALIVE once its latest state arrives.
	reregistered bool
	incarnation  string // of the worker process, from its registration
	// coresUsed and memoryUsed count what is placed here, launches still
	// being committed included (placement must not reuse them).
	coresUsed  int
	memoryUsed int
	resUsed    resourceUse // custom resources in use (resources.go)
	// resNames: the names of the custom resources it offers, sorted (a
	// worker's offer is fixed for its registration).
	resNames []string
	// tags counts its executors by placement.Tag (GPU clustering keeps
	// alike executors together).
	tags      map[string]int
	executors map[execKey]*executorInfo
	drivers   map[string]*driverInfo
	// removing: the worker's removal is being committed; it takes nothing
	// new, and these wait for the outcome.
	removing *waiters
	// drainKilled: its drain deadline passed and what ran there was killed.
	drainKilled bool
	limits      string // as it registered (wire.RegisterWorker.Limits)
	// diskFull: its last heartbeat said its disk is short of space (why);
	// nothing new is placed on it meanwhile.
	diskFull string
	// ports: the ports it hands out, and those taken (held by value: one
	// allocation less a worker of a large fleet).
	ports scheduler.PortPool
	// unhealthy: processes of several apps failed here lately
	// (exclusions.go): why, and since when; nothing new goes here.
	unhealthy      string
	unhealthySince time.Time
	// touch tells the core that what placement sees of the worker changed.
	touch func(*workerInfo)
	// slot names it to the scheduler while the core knows it (fleet.go);
	// -1: none.
	slot int
}

// changed reports a change of the worker's free capacity or state to the
// core (nil in a worker that is not the core's).
func (w *workerInfo) changed() {
	if w.touch != nil {
		w.touch(w)
	}
}

// schedulable reports whether new work may be placed on the worker.
func (w *workerInfo) schedulable() bool {
	return w.state == wire.WorkerAlive && w.removing == nil
}

// placeable reports whether new work may go to w: schedulable, and its
// disk not full.
func (w *workerInfo) placeable() bool {
	return w.schedulable() && w.diskFull == "" && w.unhealthy == ""
}

// committedUse is what the worker holds by the committed state: launches
// still being committed are not shown.
func (w *workerInfo) committedUse() (cores, memory int) {
	cores, memory = w.coresUsed, w.memoryUsed
	if len(w.executors) == 0 && len(w.drivers) == 0 {
		return cores, memory // most of a large fleet: no map to walk
	}
	for _, e := range w.executors {
		if e.launching {
			cores -= e.cores
			memory -= e.memory
		}
	}
	for _, d := range w.drivers {
		if d.launching {
			cores -= d.rec.Desc.Cores
			memory -= d.rec.Desc.MemoryMB
		}
	}
	return cores, memory
}

type execKey struct {
	app string
	id  int
}

func newWorkerInfo(rec persistence.WorkerRecord, state wire.WorkerState, now time.Time) *workerInfo {
	return &workerInfo{
		// executors and drivers are made on first use: most of a large
		// fleet holds none (two empty maps a worker cost ~100 bytes each).
		rec: rec, state: state, lastHeartbeat: now, resNames: slices.Sorted(maps.Keys(rec.Resources)),
		ports: *scheduler.NewPortPool(rec.PortRange), slot: -1,
	}
}

func (w *workerInfo) coresFree() int  { return w.rec.Cores - w.coresUsed }
func (w *workerInfo) memoryFree() int { return w.rec.MemoryMB - w.memoryUsed }
func (w *workerInfo) hostPort() string {
	return hostPort(w.rec.Host, w.rec.Port)
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func (w *workerInfo) addExecutor(e *executorInfo) {
	if w.executors == nil {
		w.executors = map[execKey]*executorInfo{}
	}
	w.executors[execKey{e.app.rec.ID, e.id}] = e
	w.coresUsed += e.cores
	w.memoryUsed += e.memory
	w.useResources(e.resources, 1)
	w.ports.Hold(e.ports)
	if tag := e.tag(); tag != "" {
		if w.tags == nil {
			w.tags = map[string]int{}
		}
		w.tags[tag]++
	}
	w.changed()
}

func (w *workerInfo) removeExecutor(e *executorInfo) {
	k := execKey{e.app.rec.ID, e.id}
	if _, ok := w.executors[k]; ok {
		delete(w.executors, k)
		w.coresUsed -= e.cores
		w.memoryUsed -= e.memory
		w.useResources(e.resources, -1)
		w.ports.Release(e.ports)
		if tag := e.tag(); tag != "" {
			if w.tags[tag]--; w.tags[tag] <= 0 {
				delete(w.tags, tag)
			}
		}
		w.changed()
	}
}

// addDriver places d on w, holding the custom resources' addresses held.
func (w *workerInfo) addDriver(d *driverInfo, held wire.ResourceGrants) {
	if _, ok := w.drivers[d.rec.ID]; ok {
		return
	}
	if w.drivers == nil {
		w.drivers = map[string]*driverInfo{}
	}
	w.drivers[d.rec.ID] = d
	w.coresUsed += d.rec.Desc.Cores
	w.memoryUsed += d.rec.Desc.MemoryMB
	d.held = held
	w.useResources(held, 1)
	w.ports.Hold(d.ports)
	w.changed()
}

func (w *workerInfo) removeDriver(d *driverInfo) {
	if _, ok := w.drivers[d.rec.ID]; ok {
		delete(w.drivers, d.rec.ID)
		w.coresUsed -= d.rec.Desc.Cores
		w.memoryUsed -= d.rec.Desc.MemoryMB
		w.useResources(d.held, -1)
		d.held = nil
		w.ports.Release(d.ports)
		w.changed()
	}
}

type appInfo struct {
	// rec is the app's committed record. Its writes go one at a time
	// (writes), each carrying rec plus its own change.
	rec    persistence.AppRecord
	writes serial
	// spec is what the scheduler reads of rec's description, resolved
	// once (its queue named, its resources in thousandths).
	spec      scheduler.AppSpec
	state     wire.AppState
	executors map[int]*executorInfo // live ones, launches being committed included
	// bySeq is its executors in order of age (seq), oldest first, ended
	// ones among them until the next compaction (adopt): preemption
	// looks at the most recent without sorting them.
	bySeq      []*executorInfo
	finished   []wire.ExecutorStatus // the most recent that ended, as they ended (persistence.EndedExecutorsKept)
	hosts      map[string]struct{}   // workers that ran an executor of the app
	nextExecID int                   // below rec.ExecutorIDsReserved, which is durable
	// waitingSince: since when it has wanted executors and got none (a
	// higher priority preempts within its queue after PreemptionDelay).
	waitingSince time.Time
	// gang (gang.go): since when its gang has waited to be placed whole,
	// and whether its gang is being killed to start again.
	gangWaitingSince time.Time
	gangRestarting   bool
	// ending: the app's end is being committed (or waits for an earlier
	// write of the app); it gets no more executors, and these wait.
	ending       *waiters
	coresGranted int
	retryCount   int
	fastEnds     int                            // executors in a row that ended soon after starting (backoff.go)
	failures     []time.Time                    // its executors' failures within its restart policy's interval (restart.go)
	excluded     map[string]scheduler.Exclusion // workers its executors are kept off, by id (exclusions.go)
	// leavingCores and leavingExecs are what its executors being taken
	// back hold (preempt.go): its queue is about to be without them.
	leavingCores, leavingExecs int
	backoffUntil               time.Time       // no new executors before this
	recent                     []wire.AppEvent // its last events, for the UI (recentEventsKept)
	subs                       map[*subscriber]struct{}
	lastSeen                   time.Time // last sign of life of its client
	endedAt                    time.Time
	message                    string
}

func newAppInfo(rec persistence.AppRecord, state wire.AppState, now time.Time) *appInfo {
	return &appInfo{
		rec: rec, spec: scheduler.NewAppSpec(rec.Desc), state: state, lastSeen: now,
		executors: map[int]*executorInfo{},
		hosts:     map[string]struct{}{},
		subs:      map[*subscriber]struct{}{},
	}
}

func (a *appInfo) coresLeft() int { return a.spec.CoresLeft(a.coresGranted) }

func (a *appInfo) executorLimit() int {
	if a.rec.ExecutorLimit == nil {
		return placement.Unlimited
	}
	return *a.rec.ExecutorLimit
}

// adopt makes e, on its worker, one of a's executors, holding its cores
// (a placement, or one a new leader recovers): retire undoes it.
func (a *appInfo) adopt(e *executorInfo) {
	a.executors[e.id] = e
	a.coresGranted += e.cores
	if len(a.bySeq) >= 2*len(a.executors)+16 {
		a.bySeq = slices.DeleteFunc(a.bySeq, func(old *executorInfo) bool { return a.executors[old.id] != old })
	}
	a.bySeq = append(a.bySeq, e) // e.seq is the newest: callers number it just before
	a.nextExecID = max(a.nextExecID, e.id+1)
	e.worker.addExecutor(e)
}

// retire moves an executor that ended out of the live set; st is its
// status as it ended, as its end's write keeps it.
func (a *appInfo) retire(e *executorInfo, st wire.ExecutorStatus) {
	if _, ok := a.executors[e.id]; !ok {
		return
	}
	delete(a.executors, e.id)
	a.coresGranted -= e.cores
	a.finished = persistence.KeepLastEnded(append(a.finished, st))
}

type executorInfo struct {
	// The fields a preemption view reads of each of tens of thousands of
	// executors come first, to share a cache line or two.
	app    *appInfo
	worker *workerInfo
	cores  int
	memory int
	seq    uint64 // its rank by age among the executors (nextSeq)
	state  wire.ExecutorState
	// launching: its placement record is being committed; it holds its
	// cores but is not shown, nor launched, until then.
	launching bool
	// ending: its end is being committed; nothing may take it meanwhile (a
	// preemption's write of its record, after the end's delete, would
	// bring the record back for a new leader to adopt).
	ending bool
	// endingAs is its status as the write of its end in flight keeps it
	// (nil when none is): an app's final record decided meanwhile lists
	// it so, not as killed by the app's end.
	endingAs *wire.ExecutorStatus
	// preemptedFor, once durable, is why it is being taken back, and
	// killSent whether this leader has told its worker.
	preemptedFor string
	killSent     bool
	id           int
	resources    wire.ResourceGrants // custom resources' addresses it holds
	ports        map[string]int      // its ports by label (ports.go)
	health       wire.Health         // what its checks say ("" without)
	runningSince time.Time           // when it was last reported RUNNING
	exitCode     *int
	message      string
	cause        wire.FailureCause // who its failure is owed to, once FAILED
	// started is when its placement was decided (preemption takes the
	// most recent first).
	started time.Time
	// reclaimedFor is the queue this leader took it back for, until it
	// ends (core.round.reclaiming counts them).
	reclaimedFor string
}

// newDriverInfo is a driver of rec.
func newDriverInfo(rec persistence.DriverRecord, state wire.DriverState) *driverInfo {
	return &driverInfo{rec: rec, spec: scheduler.NewDriverSpec(rec.Desc), state: state}
}

type driverInfo struct {
	// rec is the driver's committed record, written one change at a time.
	rec    persistence.DriverRecord
	writes serial
	// spec is what the scheduler reads of rec's description.
	spec         scheduler.Spec
	state        wire.DriverState
	worker       *workerInfo
	exitCode     *int
	message      string
	relaunchedAs string
	endedAt      time.Time
	// launching: its launch record is being committed; it holds its
	// worker's resources but shows as waiting until then.
	launching bool
	// held: the custom resources' addresses it holds on its worker; ports:
	// the ports of its labels there (docs/HEALTH.md), and health what its
	// checks say of its current run.
	held   wire.ResourceGrants
	ports  map[string]int
	health wire.Health
	// ending: its end is being committed; these wait for it.
	ending *waiters
}

// coresShown is the cores the app holds by the committed state.
func (a *appInfo) coresShown() int {
	n := a.coresGranted
	for _, e := range a.executors {
		if e.launching {
			n -= e.cores
		}
	}
	return n
}

// leaving counts e in (sign 1) or out of (-1) what a's executors being
// taken back hold.
func (a *appInfo) leaving(e *executorInfo, sign int) {
	a.leavingCores += sign * e.cores
	a.leavingExecs += sign
}
