package master

import (
	"net"
	"strconv"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/placement"
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
	coresUsed    int
	memoryUsed   int
	executors    map[execKey]*executorInfo
	drivers      map[string]*driverInfo
}

type execKey struct {
	app string
	id  int
}

func newWorkerInfo(rec persistence.WorkerRecord, state wire.WorkerState, now time.Time) *workerInfo {
	return &workerInfo{
		rec: rec, state: state, lastHeartbeat: now,
		executors: map[execKey]*executorInfo{},
		drivers:   map[string]*driverInfo{},
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
	w.executors[execKey{e.app.rec.ID, e.id}] = e
	w.coresUsed += e.cores
	w.memoryUsed += e.memory
}

func (w *workerInfo) removeExecutor(e *executorInfo) {
	k := execKey{e.app.rec.ID, e.id}
	if _, ok := w.executors[k]; ok {
		delete(w.executors, k)
		w.coresUsed -= e.cores
		w.memoryUsed -= e.memory
	}
}

func (w *workerInfo) addDriver(d *driverInfo) {
	if _, ok := w.drivers[d.rec.ID]; ok {
		return
	}
	w.drivers[d.rec.ID] = d
	w.coresUsed += d.rec.Desc.Cores
	w.memoryUsed += d.rec.Desc.MemoryMB
}

func (w *workerInfo) removeDriver(d *driverInfo) {
	if _, ok := w.drivers[d.rec.ID]; ok {
		delete(w.drivers, d.rec.ID)
		w.coresUsed -= d.rec.Desc.Cores
		w.memoryUsed -= d.rec.Desc.MemoryMB
	}
}

type appInfo struct {
	rec        persistence.AppRecord
	state      wire.AppState
	executors  map[int]*executorInfo // live ones
	finished   []*executorInfo       // the most recent that ended, for status
	hosts      map[string]struct{}   // workers that ran an executor of the app
	nextExecID int
	// idsDurable: executor ids below it are durably reserved, and no id at
	// or above it is handed out. rec is the desired record, which every
	// write of the app carries in full (so a limit change cannot undo a
	// reservation, or the reverse); idsDurable follows what has committed.
	idsDurable int
	// reserving: a write raising rec.ExecutorIDsReserved is in flight.
	reserving    bool
	coresGranted int
	retryCount   int
	subs         map[*subscriber]struct{}
	lastSeen     time.Time // last sign of life of its client
	endedAt      time.Time
	message      string
}

// finishedExecutorsKept bounds the ended executors an app lists.
const finishedExecutorsKept = 100

func newAppInfo(rec persistence.AppRecord, state wire.AppState, now time.Time) *appInfo {
	return &appInfo{
		rec: rec, state: state, lastSeen: now,
		executors: map[int]*executorInfo{},
		hosts:     map[string]struct{}{},
		subs:      map[*subscriber]struct{}{},
	}
}

func (a *appInfo) maxCores() int {
	if a.rec.Desc.MaxCores <= 0 {
		return placement.Unlimited
	}
	return a.rec.Desc.MaxCores
}

func (a *appInfo) coresLeft() int { return a.maxCores() - a.coresGranted }

func (a *appInfo) executorLimit() int {
	if a.rec.ExecutorLimit == nil {
		return placement.Unlimited
	}
	return *a.rec.ExecutorLimit
}

// retire moves an executor that ended out of the live set.
func (a *appInfo) retire(e *executorInfo) {
	if _, ok := a.executors[e.id]; !ok {
		return
	}
	delete(a.executors, e.id)
	a.coresGranted -= e.cores
	a.finished = append(a.finished, e)
	if len(a.finished) > finishedExecutorsKept {
		a.finished = a.finished[len(a.finished)-finishedExecutorsKept:]
	}
}

type executorInfo struct {
	app          *appInfo
	id           int
	worker       *workerInfo
	cores        int
	memory       int
	state        wire.ExecutorState
	runningSince time.Time // when it was last reported RUNNING
	exitCode     *int
	message      string
}

type driverInfo struct {
	rec           persistence.DriverRecord
	state         wire.DriverState
	worker        *workerInfo
	exitCode      *int
	message       string
	relaunchedAs  string
	endedAt       time.Time
	killRequested bool
}

// finalRecord is the record of a driver that ended.
func (d *driverInfo) finalRecord() persistence.DriverRecord {
	r := d.rec
	r.State, r.ExitCode, r.Message, r.RelaunchedAs = d.state, d.exitCode, d.message, d.relaunchedAs
	ended := d.endedAt
	r.EndedAt = &ended
	if d.worker != nil {
		r.WorkerID = d.worker.rec.ID
	}
	return r
}
