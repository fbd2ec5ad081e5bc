package master

import (
	"slices"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

func executorStatus(e *executorInfo) *wire.ExecutorStatus {
	return &wire.ExecutorStatus{
		ID: e.id, WorkerID: e.worker.rec.ID, Host: e.worker.rec.Host, Cores: e.cores, MemoryMB: e.memory,
		State: e.state, ExitCode: e.exitCode, Message: e.message, Resources: e.resources,
		Ports: e.ports, Health: e.health, Cause: e.cause, DrainDeadline: e.worker.drainDeadline(),
	}
}

func appStatus(a *appInfo) *wire.AppStatus {
	s := &wire.AppStatus{
		ID: a.rec.ID, Name: a.rec.Desc.Name, State: a.state, SubmittedAt: a.rec.SubmittedAt,
		MaxCores: a.rec.Desc.MaxCores, CoresGranted: a.coresShown(),
		CoresPerExecutor: a.rec.Desc.CoresPerExecutor, MemoryPerExecutorMB: a.rec.Desc.MemoryPerExecutorMB,
		ExecutorLimit: a.rec.ExecutorLimit, RetryCount: a.retryCount, Message: a.message,
		ResourcesPerExecutor: a.rec.Desc.ResourcesPerExecutor, Executors: []wire.ExecutorStatus{},
		Queue: a.spec.Queue, Priority: a.rec.Desc.Priority, Tenant: a.rec.Tenant,
		Ports: a.rec.Desc.Ports, Checks: a.rec.Desc.Checks, Restart: a.rec.Desc.Restart, Excluded: a.exclusionList(),
		Constraints: a.rec.Desc.Constraints, Gang: a.rec.Desc.Gang, GangRestart: a.rec.Desc.GangRestart,
		Detached: a.rec.Desc.Detached, UIURL: a.rec.Desc.UIURL, Command: a.rec.Desc.Command,
	}
	if a.state.Finished() {
		ended := a.endedAt
		s.EndedAt = &ended
		s.CoresGranted = a.rec.CoresGranted
	}
	for _, e := range sortedExecutors(a.executors) {
		if !e.launching { // not placed until its record is durable
			s.Executors = append(s.Executors, *executorStatus(e))
		}
	}
	s.Executors = append(s.Executors, a.finished...)
	if a.state.Finished() && len(s.Executors) == 0 {
		// Loaded from its final record by a later leader: the executors
		// as the leader that ended it listed them.
		s.Executors = append(s.Executors, a.rec.Executors...)
	}
	return s
}

func driverStatus(d *driverInfo) *wire.DriverStatus {
	s := &wire.DriverStatus{
		ID: d.rec.ID, Name: d.rec.Desc.Name, State: d.state, SubmittedAt: d.rec.SubmittedAt,
		Cores: d.rec.Desc.Cores, MemoryMB: d.rec.Desc.MemoryMB, Supervise: d.rec.Desc.Supervise,
		Command: d.rec.Desc.Command, ExitCode: d.exitCode, Message: d.message,
		RelaunchOf: d.rec.RelaunchOf, RelaunchedAs: d.relaunchedAs, WorkerID: d.rec.WorkerID,
		KillRequested: d.rec.KillRequested, ResourcesAsked: d.rec.Desc.Resources,
		Queue: d.spec.Queue, Priority: d.rec.Desc.Priority, Tenant: d.rec.Tenant,
		Constraints: d.rec.Desc.Constraints,
	}
	if d.state.Finished() && !d.endedAt.IsZero() { // zero: ended before records kept the time
		ended := d.endedAt
		s.EndedAt = &ended
	}
	switch {
	case d.launching: // its launch is not durable yet: it still waits
		s.State, s.WorkerID = wire.DriverSubmitted, ""
	case d.worker != nil:
		s.WorkerID, s.Resources, s.Ports, s.Health = d.worker.rec.ID, d.held, d.ports, d.health
	case d.state == wire.DriverSubmitted:
		s.WorkerID = "" // waiting (again): the record names where it was meant to run
	}
	return s
}

func workerStatus(w *workerInfo) wire.WorkerStatus {
	cores, memory := w.committedUse()
	s := wire.WorkerStatus{
		ID: w.rec.ID, Host: w.rec.Host, Port: w.rec.Port, Address: w.rec.Address,
		Cores: w.rec.Cores, CoresUsed: cores, MemoryMB: w.rec.MemoryMB, MemoryUsedMB: memory,
		State: w.state, LastHeartbeat: w.lastHeartbeat, DrainDeadline: w.rec.DrainDeadline, Limits: w.limits,
		Resources: w.resourceStatus(), DiskFull: w.diskFull, Unhealthy: w.unhealthy,
		Labels: w.rec.Labels,
	}
	if !w.unhealthySince.IsZero() {
		since := w.unhealthySince
		s.UnhealthySince = &since
	}
	return s
}

// clusterStatus is the leader's view.
// Without completed, the finished apps and drivers are left out (a cheap
// answer for monitoring; the lists may be long).
func (c *core) clusterStatus(completed, listWorkers bool) *wire.ClusterStatus {
	since := c.leaderSince // a copy: the answer is encoded off the loop
	s := &wire.ClusterStatus{
		MasterID: c.cfg.ID, Status: c.status, View: wire.ViewLeader, Leader: c.cfg.Advertise,
		LeaderID: c.cfg.ID, Epoch: c.epoch, LeaderSince: &since,
		Workers: []wire.WorkerStatus{}, ActiveApps: []wire.AppStatus{}, CompletedApps: []wire.AppStatus{},
		ActiveDrivers: []wire.DriverStatus{}, CompletedDrivers: []wire.DriverStatus{},
	}
	if listWorkers {
		for _, w := range c.sortedWorkerList() {
			s.Workers = append(s.Workers, workerStatus(w))
			s.WorkerSummary.Add(s.Workers[len(s.Workers)-1])
		}
	} else {
		s.WorkerSummary = c.workerSummary()
	}
	sv := c.statusView()
	for _, a := range c.appOrder {
		s.ActiveApps = append(s.ActiveApps, *c.appStatusWaiting(a, sv))
	}
	for _, d := range sortedDrivers(c.drivers) {
		s.ActiveDrivers = append(s.ActiveDrivers, *c.driverStatusWaiting(d, sv))
	}
	if completed {
		s.CompletedApps = newestFirst(c.completedApps, appStatus)
		s.CompletedDrivers = newestFirst(c.completedDrivers, driverStatus)
	}
	return s
}

// newestFirst is the status of each ended app or driver, the one that
// ended last first.
func newestFirst[T, S any](ended []T, status func(T) *S) []S {
	out := make([]S, 0, len(ended))
	for _, x := range slices.Backward(ended) {
		out = append(out, *status(x))
	}
	return out
}

// app returns the status of an active or completed app.
func (c *core) app(id string) (wire.AppStatus, error) {
	return readOne(c, c.findApp(id), func(a *appInfo) *wire.AppStatus { return c.appStatusWaiting(a, c.statusView()) }, "application", id)
}

// driver returns the status of an active or completed driver.
func (c *core) driver(id string) (wire.DriverStatus, error) {
	return readOne(c, c.findDriver(id), func(d *driverInfo) *wire.DriverStatus { return c.driverStatusWaiting(d, c.statusView()) }, "driver", id)
}

// appStatusWaiting is a's status with why it waits, judged against sv.
func (c *core) appStatusWaiting(a *appInfo, sv *scheduler.StatusView) *wire.AppStatus {
	st := appStatus(a)
	st.Waiting = c.appWaiting(a, sv)
	return st
}

// driverStatusWaiting is d's status with why it waits.
func (c *core) driverStatusWaiting(d *driverInfo, sv *scheduler.StatusView) *wire.DriverStatus {
	st := driverStatus(d)
	st.Waiting = c.driverWaiting(d, sv)
	return st
}

// readOne answers a read of one entity (x, nil if not listed) as the
// leader.
func readOne[T, S any](c *core, x *T, status func(*T) *S, kind, id string) (S, error) {
	var zero S
	if !c.leading() {
		return zero, c.notLeader()
	}
	if x == nil {
		return zero, notFound(kind, id)
	}
	return *status(x), nil
}

// toEnd is the active x (nil: none) a request to end it is for, as the
// leader. Without one, reply has the answer: not the leader, the final
// status of one that ended already (there is nothing to do), or not found.
func toEnd[T, S any](c *core, x *T, ended func(id string) *T, status func(*T) *S, kind, id string, reply reply[S]) *T {
	switch {
	case !c.leading():
		reply.fail(c.notLeader())
	case x != nil:
		return x
	default:
		if done := ended(id); done != nil {
			reply(*status(done), nil)
		} else {
			reply.fail(notFound(kind, id))
		}
	}
	return nil
}

// followerStatus is what a master that does not lead can tell from its
// replica of the durable state: records only, no executors, no heartbeats.
func followerStatus(id string, status wire.MasterStatus, leaderID, leader string, s *persistence.State, completed, listWorkers bool) *wire.ClusterStatus {
	out := &wire.ClusterStatus{
		MasterID: id, Status: status, View: wire.ViewFollower, Leader: leader, LeaderID: leaderID, Epoch: s.Epoch,
		Workers: []wire.WorkerStatus{}, ActiveApps: []wire.AppStatus{}, CompletedApps: []wire.AppStatus{},
		ActiveDrivers: []wire.DriverStatus{}, CompletedDrivers: []wire.DriverStatus{},
	}
	// What the placements on record hold on each worker: the leader's
	// figure but for launches not yet durable (never 0 beside running
	// apps because this master does not lead).
	type use struct{ cores, memory int }
	used := map[string]use{}
	for _, e := range s.Executors {
		u := used[e.WorkerID]
		used[e.WorkerID] = use{u.cores + e.Cores, u.memory + e.MemoryMB}
	}
	for _, d := range s.Drivers {
		if d.WorkerID != "" && d.State == wire.DriverRunning {
			u := used[d.WorkerID]
			used[d.WorkerID] = use{u.cores + d.Desc.Cores, u.memory + d.Desc.MemoryMB}
		}
	}
	for _, r := range sortedRecords(s.Workers, func(r *persistence.WorkerRecord) string { return r.ID }) {
		u := used[r.ID]
		ws := wire.WorkerStatus{
			ID: r.ID, Host: r.Host, Port: r.Port, Address: r.Address, Cores: r.Cores, MemoryMB: r.MemoryMB,
			CoresUsed: u.cores, MemoryUsedMB: u.memory,
			State: wire.WorkerUnknown, Resources: (&workerInfo{rec: *r}).resourceUse(), Labels: r.Labels,
		}
		out.WorkerSummary.Add(ws)
		if listWorkers {
			out.Workers = append(out.Workers, ws)
		}
	}
	byEnd(sortedRecords(s.Apps, func(r *persistence.AppRecord) string { return sortTime(r.SubmittedAt) + r.ID }),
		func(r *persistence.AppRecord) wire.AppStatus { l := loadedApp(r); return recordAppStatus(&l) }, completed, &out.ActiveApps, &out.CompletedApps)
	// An active app's record says WAITING whatever it does: whether it
	// runs is the leader's to know (its executors' states are not in the
	// log). UNKNOWN, with the cores its placements on record hold.
	placed := map[string]int{}
	for _, e := range s.Executors {
		placed[e.AppID] += e.Cores
	}
	for i := range out.ActiveApps {
		a := &out.ActiveApps[i]
		a.State, a.CoresGranted = wire.AppUnknown, placed[a.ID]
	}
	byEnd(sortedRecords(s.Drivers, func(r *persistence.DriverRecord) string { return sortTime(r.SubmittedAt) + r.ID }),
		func(r *persistence.DriverRecord) wire.DriverStatus {
			l := loadedDriver(r)
			return recordDriverStatus(&l)
		}, completed, &out.ActiveDrivers, &out.CompletedDrivers)
	for _, r := range sortedRecords(s.Masters, func(r *persistence.MasterRecord) string { return r.ID }) {
		out.Masters = append(out.Masters, wire.MasterNode{ID: r.ID, APIAddr: r.APIAddr, Leader: r.ID == leaderID})
	}
	return out
}

// byEnd appends the status of each record, in order, to active, or to
// ended when it ended and ended records are asked for.
func byEnd[R interface{ Finished() bool }, S any](recs []R, status func(R) S, withEnded bool, active, ended *[]S) {
	for _, r := range recs {
		switch {
		case !r.Finished():
			*active = append(*active, status(r))
		case withEnded:
			*ended = append(*ended, status(r))
		}
	}
}

// recordAppStatus and recordDriverStatus are the status a record says, for
// a record whose queue is named (admitted, or loadedApp's and
// loadedDriver's): a follower's view, and an ended one's. Every field the
// record holds is shown, as the leader shows it (a follower's dropped the
// app's Spark UI link, its command, ports, checks, restart policy,
// constraints and gang); only the leader's memory (exclusions, retries,
// waiting reasons) is not there to show.
func recordAppStatus(r *persistence.AppRecord) wire.AppStatus {
	return wire.AppStatus{
		ID: r.ID, Name: r.Desc.Name, State: r.State, SubmittedAt: r.SubmittedAt, EndedAt: r.EndedAt,
		MaxCores: r.Desc.MaxCores, CoresGranted: r.CoresGranted, CoresPerExecutor: r.Desc.CoresPerExecutor,
		MemoryPerExecutorMB: r.Desc.MemoryPerExecutorMB, ExecutorLimit: r.ExecutorLimit, Message: r.Message,
		ResourcesPerExecutor: r.Desc.ResourcesPerExecutor, Executors: append([]wire.ExecutorStatus{}, r.Executors...),
		Queue: r.Desc.Queue, Priority: r.Desc.Priority, Tenant: r.Tenant, Detached: r.Desc.Detached,
		Ports: r.Desc.Ports, Checks: r.Desc.Checks, Restart: r.Desc.Restart, Constraints: r.Desc.Constraints,
		Gang: r.Desc.Gang, GangRestart: r.Desc.GangRestart, UIURL: r.Desc.UIURL, Command: r.Desc.Command,
	}
}

func recordDriverStatus(r *persistence.DriverRecord) wire.DriverStatus {
	return wire.DriverStatus{
		ID: r.ID, Name: r.Desc.Name, State: r.State, SubmittedAt: r.SubmittedAt, Cores: r.Desc.Cores, MemoryMB: r.Desc.MemoryMB,
		Supervise: r.Desc.Supervise, Command: r.Desc.Command, WorkerID: r.WorkerID, ExitCode: r.ExitCode,
		Message: r.Message, RelaunchOf: r.RelaunchOf, RelaunchedAs: r.RelaunchedAs, KillRequested: r.KillRequested,
		ResourcesAsked: r.Desc.Resources, EndedAt: r.EndedAt,
		Queue: r.Desc.Queue, Priority: r.Desc.Priority, Tenant: r.Tenant, Constraints: r.Desc.Constraints,
	}
}
