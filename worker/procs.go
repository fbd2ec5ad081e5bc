package worker

import (
	"iter"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/wire"
)

type procKind int

const (
	kindExecutor procKind = iota
	kindDriver
)

type execKey struct {
	appID  string
	execID int
}

// proc is one executor or driver: its launch request, fixed at creation,
// and its live state, guarded by procTable.mu. A runner goroutine owns its
// lifecycle (start, wait, restart, final report).
type proc struct {
	kind      procKind
	appID     string // executors
	execID    int    // executors
	driverID  string // drivers
	cores     int
	memoryMB  int
	supervise bool // drivers
	resources wire.ResourceGrants
	user      string // its tenant's Unix user (--run-as dynamic), "" for an identity of its own
	// stopAfterDisconnect: stop it once out of touch with the masters this
	// long (disconnect.go); 0: never.
	stopAfterDisconnect time.Duration
	// ports, checks (health.go) and, for a supervised driver, its restart
	// policy (nil: restarted for ever).
	ports     map[string]int
	checks    []wire.Check
	restart   *wire.RestartPolicy
	argv      []string // placeholders substituted
	env       []string
	dir       string
	logs      *logCopier // with --log-max-size: the copies of its output; owned by its runner
	cg        *cgroup    // its attempt's cgroup (nil without); owned by its runner
	oomKilled bool       // its last attempt was killed for its memory; owned by its runner
	// failedBy: who its start's failure is owed to (the worker's own
	// failures count against its health); owned by its runner.
	failedBy wire.FailureCause
	// stopChecks stops its current attempt's checks (checks.go); owned
	// by its runner.
	stopChecks func()

	killCh chan struct{} // closed when a kill is requested
	done   chan struct{} // closed once the final state is queued

	// Guarded by procTable.mu.
	state      string        // a wire.ExecutorState or wire.DriverState
	process    *os.Process   // the running attempt; nil when none
	killReason string        // set once a kill is requested
	killGrace  time.Duration // the kill's grace, when not --kill-grace
	outOfTouch bool          // the kill is stopAfterDisconnect's (disconnect.go)
	health     wire.Health   // what its checks say of its current attempt (health.go)
	// unhealthy: why its checks had its current attempt killed (health.go);
	// the attempt ends FAILED saying so.
	unhealthy string
	ended     bool // final state reached
}

func (p *proc) executorState() wire.ExecutorState { return wire.ExecutorState(p.state) }
func (p *proc) driverState() wire.DriverState     { return wire.DriverState(p.state) }

// procTable is every executor and driver the worker runs, plus the most
// recently ended ones (so that a repeated launch stays idempotent).
type procTable struct {
	mu        sync.Mutex
	executors map[execKey]*proc
	drivers   map[string]*proc
	ended     []*proc // oldest first, trimmed to maxFinishedProcsRemembered
	closing   bool    // shutting down: no more launches
}

func newProcTable() *procTable {
	return &procTable{executors: map[execKey]*proc{}, drivers: map[string]*proc{}}
}

// add inserts p unless a process with its id exists (then it returns the
// existing one) or the worker is shutting down (then it returns nil, false).
func (t *procTable) add(p *proc) (existing *proc, added bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return nil, false
	}
	switch p.kind {
	case kindExecutor:
		k := execKey{p.appID, p.execID}
		if old, ok := t.executors[k]; ok {
			return old, false
		}
		t.executors[k] = p
	case kindDriver:
		if old, ok := t.drivers[p.driverID]; ok {
			return old, false
		}
		t.drivers[p.driverID] = p
	}
	return p, true
}

// exists reports whether a process of p's id is listed (a repeated launch).
func (t *procTable) exists(p *proc) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.kind == kindExecutor {
		return t.executors[execKey{p.appID, p.execID}] != nil
	}
	return t.drivers[p.driverID] != nil
}

func (t *procTable) executor(appID string, execID int) *proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.executors[execKey{appID, execID}]
}

func (t *procTable) driver(id string) *proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.drivers[id]
}

// live returns the processes that have not ended, optionally only the
// executors of one app; with closing set, no launch is accepted afterwards.
func (t *procTable) live(appID string, closing bool) []*proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	if closing {
		t.closing = true
	}
	var out []*proc
	for p := range t.liveLocked() {
		if appID == "" || p.kind == kindExecutor && p.appID == appID {
			out = append(out, p)
		}
	}
	return out
}

// liveLocked yields the processes that have not ended, executors first.
// The caller holds t.mu.
func (t *procTable) liveLocked() iter.Seq[*proc] {
	return func(yield func(*proc) bool) {
		for _, p := range t.executors {
			if !p.ended && !yield(p) {
				return
			}
		}
		for _, p := range t.drivers {
			if !p.ended && !yield(p) {
				return
			}
		}
	}
}

// setEnded records p's final state and forgets the oldest ended processes
// beyond the limit.
func (t *procTable) setEnded(p *proc, state string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p.state, p.ended, p.process = state, true, nil
	t.ended = append(t.ended, p)
	for len(t.ended) > maxFinishedProcsRemembered {
		old := t.ended[0]
		t.ended[0] = nil
		t.ended = t.ended[1:]
		if old.kind == kindExecutor {
			delete(t.executors, execKey{old.appID, old.execID})
		} else {
			delete(t.drivers, old.driverID)
		}
	}
}

// stateOf reads p's state; its runner may be changing it.
func (t *procTable) stateOf(p *proc) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return p.state
}

// setState records a non-final state.
func (t *procTable) setState(p *proc, state string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p.state = state
}

type usage struct{ cores, memoryMB int }

// used sums the resources of the processes that have not ended.
func (t *procTable) used() usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	var u usage
	for p := range t.liveLocked() {
		u.cores += p.cores
		u.memoryMB += p.memoryMB
	}
	return u
}

// snapshot lists what has not ended, sorted for stable output.
func (t *procTable) snapshot() ([]wire.ExecutorReport, []wire.DriverReport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	execs, drivers := []wire.ExecutorReport{}, []wire.DriverReport{}
	for p := range t.liveLocked() {
		if p.kind == kindExecutor {
			execs = append(execs, wire.ExecutorReport{AppID: p.appID, ExecutorID: p.execID,
				Cores: p.cores, MemoryMB: p.memoryMB, State: p.executorState(), Resources: p.resources, Ports: p.ports, Health: p.health})
		} else {
			drivers = append(drivers, wire.DriverReport{DriverID: p.driverID,
				Cores: p.cores, MemoryMB: p.memoryMB, State: p.driverState(), Resources: p.resources, Ports: p.ports, Health: p.health})
		}
	}
	sort.Slice(execs, func(i, j int) bool {
		if execs[i].AppID != execs[j].AppID {
			return execs[i].AppID < execs[j].AppID
		}
		return execs[i].ExecutorID < execs[j].ExecutorID
	})
	sort.Slice(drivers, func(i, j int) bool { return drivers[i].DriverID < drivers[j].DriverID })
	return execs, drivers
}

// signalLocked sends sig to p's running attempt: to its process group (the
// children it started) and to the process itself, in case it left the
// group. The runner waits for the exit without reaping, clears p.process
// under the lock and only then reaps, so a recorded process still holds its
// pid and group id: neither can have been recycled for someone else.
func (p *proc) signalLocked(sig syscall.Signal) {
	if p.process == nil {
		return
	}
	_ = syscall.Kill(-p.process.Pid, sig)
	// The process itself only if it left its group (setpgid, setsid): a
	// second SIGTERM to one in the group would read as "stop now" to
	// programs that take it so, and cut its grace short.
	if pgid, err := syscall.Getpgid(p.process.Pid); err != nil || pgid != p.process.Pid {
		_ = p.process.Signal(sig) // pidfd-based: never hits a recycled pid
	}
}
