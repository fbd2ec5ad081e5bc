package master

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

func (c *core) registered(duplicate bool) wire.RegisteredWorker {
	return wire.RegisteredWorker{
		MasterID: c.cfg.ID, Epoch: c.epoch, Duplicate: duplicate,
		HeartbeatIntervalMs: c.cfg.heartbeatInterval().Milliseconds(),
	}
}

// registerWorker follows Spark's rules: a known id that is not DEAD (a
// retry, or a worker answering a new leader during recovery) is accepted as
// a duplicate; a DEAD worker at the same host:port is dropped; a worker at
// the address of another live one is refused, unless that one is UNKNOWN
// (it was restarted during recovery), which the newcomer then replaces.
// The worker is acknowledged once its record is durable.
func (c *core) registerWorker(req wire.RegisterWorker, reply func(any, error)) {
	if !c.leading() {
		reply(nil, c.notLeader())
		return
	}
	if w, ok := c.workers[req.ID]; ok && w.state != wire.WorkerDead {
		if !restarted(w, req) {
			c.acceptKnownWorker(w, req)
			reply(c.registered(true), nil)
			return
		}
		// The worker process was restarted under the same id before its
		// heartbeat timeout: what ran on the old one is gone. Once that is
		// durable, register the new process.
		c.removeWorker(w, "worker restarted", func(err error) {
			if err != nil {
				reply(nil, err)
				return
			}
			c.registerWorker(req, reply)
		})
		return
	}
	if err := c.addressTaken(req); err != nil {
		reply(nil, err)
		return
	}
	rec := persistence.WorkerRecord{ID: req.ID, Host: req.Host, Port: req.Port, Address: req.Address, Cores: req.Cores, MemoryMB: req.MemoryMB}
	gen := c.gen
	c.fx.persist([]persistence.Command{persistence.PutWorker(rec)}, func(err error) {
		if err != nil {
			reply(nil, c.persistErr(gen, err))
			return
		}
		if gen != c.gen {
			reply(nil, errLeadershipLost(fmt.Errorf("registered, but with a master that no longer leads")))
			return
		}
		// The world may have moved while the write was in flight.
		if w, ok := c.workers[req.ID]; ok && w.state != wire.WorkerDead {
			if restarted(w, req) {
				reply(nil, httpx.Errorf(http.StatusServiceUnavailable, "worker %s registered twice at once; retry", req.ID))
				return
			}
			c.acceptKnownWorker(w, req)
			reply(c.registered(true), nil)
			return
		}
		if err := c.addressTaken(req); err != nil {
			c.fx.persist([]persistence.Command{persistence.DeleteWorker(req.ID)}, c.logPersistFailure("undo refused worker"))
			reply(nil, err)
			return
		}
		c.addWorker(rec, req.Incarnation)
		reply(c.registered(false), nil)
	})
}

// restarted reports whether a registration comes from a new process of a
// worker the master knows as live. A worker recovered from the log has no
// known incarnation: its latest state settles what it still runs.
func restarted(w *workerInfo, req wire.RegisterWorker) bool {
	return w.state != wire.WorkerUnknown && w.incarnation != "" && req.Incarnation != "" && w.incarnation != req.Incarnation
}

// acceptKnownWorker handles a registration from a worker the master already
// knows and has not declared DEAD.
func (c *core) acceptKnownWorker(w *workerInfo, req wire.RegisterWorker) {
	w.lastHeartbeat = c.now()
	if w.incarnation == "" {
		w.incarnation = req.Incarnation
	}
	if w.state == wire.WorkerUnknown {
		w.reregistered = true // ALIVE once its latest state says what it runs
		c.log.Info("worker re-registered during recovery", "worker", w.rec.ID)
	}
}

// addressTaken refuses a registration at the address of a live worker;
// an UNKNOWN one there is replaced (it was restarted during recovery).
func (c *core) addressTaken(req wire.RegisterWorker) error {
	old, ok := c.workerByAddr[hostPort(req.Host, req.Port)]
	if !ok || old.rec.ID == req.ID {
		return nil
	}
	if old.state == wire.WorkerUnknown {
		return nil
	}
	return httpx.Errorf(http.StatusConflict, "worker %s is already registered at %s; refusing %s", old.rec.ID, old.hostPort(), req.ID)
}

func (c *core) addWorker(rec persistence.WorkerRecord, incarnation string) {
	addr := hostPort(rec.Host, rec.Port)
	// As Spark: first forget DEAD workers at this address, then retire an
	// UNKNOWN one there (it stays listed as DEAD for a while).
	for _, id := range c.deadAt[addr] {
		if w := c.workers[id]; w != nil && w.state == wire.WorkerDead {
			c.dropWorker(w)
		}
	}
	if old, ok := c.workerByAddr[addr]; ok && old.rec.ID != rec.ID {
		c.removeWorker(old, "replaced by a new worker at the same address", nil)
		delete(c.workerByAddr, addr) // the newcomer's address from now on
	}
	w := newWorkerInfo(rec, wire.WorkerAlive, c.now())
	w.incarnation = incarnation
	c.putWorker(w)
	c.log.Info("registered worker", "worker", rec.ID, "address", rec.Address, "cores", rec.Cores, "memoryMB", rec.MemoryMB)
	c.schedule()
}

// heartbeat refreshes a live worker. A worker the master does not know, has
// expired, or lost track of in a failover is told to register again.
func (c *core) heartbeat(id string) (wire.HeartbeatReply, error) {
	if !c.leading() {
		return wire.HeartbeatReply{}, c.notLeader()
	}
	w, ok := c.workers[id]
	if !ok || w.state == wire.WorkerDead || (w.state == wire.WorkerUnknown && !w.reregistered) {
		return wire.HeartbeatReply{Epoch: c.epoch, Reconnect: true}, nil
	}
	w.lastHeartbeat = c.now()
	return wire.HeartbeatReply{Epoch: c.epoch}, nil
}

// decommissionWorker handles a worker that is shutting down: nothing new is
// placed on it, while its final reports still count. It is removed when it
// leaves, or when it stops heartbeating.
func (c *core) decommissionWorker(id string) error {
	w, err := c.liveWorker(id)
	if err != nil {
		return err
	}
	if w.state == wire.WorkerAlive {
		w.state = wire.WorkerDecommissioned
		c.log.Info("worker decommissioned: shutting down", "worker", id)
	}
	return nil
}

// workerLeft removes a worker that shut down, without waiting for its
// heartbeat timeout; it is answered once the removal is durable.
func (c *core) workerLeft(id string, reply func(any, error)) {
	w, err := c.liveWorker(id)
	if err != nil {
		reply(nil, err)
		return
	}
	c.removeWorker(w, "worker shut down", c.ack(reply))
}

// reportingWorker is the worker a state report comes from. A worker that has
// not answered a new leader yet (UNKNOWN) is told it is unknown, so that it
// registers and says everything it runs before its reports are taken: a
// report taken first would find its drivers and executors not yet adopted.
// A worker being removed is unknown too: it registers again once removed.
func (c *core) reportingWorker(id string) (*workerInfo, error) {
	w, err := c.liveWorker(id)
	if err == nil && (w.state == wire.WorkerUnknown || w.removing != nil) {
		return nil, notFound("worker", id)
	}
	return w, err
}

func (c *core) liveWorker(id string) (*workerInfo, error) {
	if !c.leading() {
		return nil, c.notLeader()
	}
	w := c.workers[id]
	if w == nil || w.state == wire.WorkerDead {
		return nil, notFound("worker", id)
	}
	return w, nil
}

// workerLatestState reconciles what a worker runs with what the master
// knows. During recovery the master adopts the executors and drivers it
// knows the apps and drivers of; anything else the worker runs is killed
// (SPARK-13604), so nothing runs that no master accounts for.
func (c *core) workerLatestState(id string, report wire.WorkerLatestState) (wire.LatestStateReply, error) {
	if !c.leading() {
		return wire.LatestStateReply{}, c.notLeader()
	}
	w, ok := c.workers[id]
	if !ok || w.state == wire.WorkerDead || w.removing != nil {
		return wire.LatestStateReply{}, notFound("worker", id)
	}
	recovering := w.state == wire.WorkerUnknown
	var reply wire.LatestStateReply
	reported := map[execKey]bool{}
	for _, r := range report.Executors {
		reported[execKey{r.AppID, r.ExecutorID}] = true
		if !c.keepReportedExecutor(w, r, recovering) {
			c.fx.send(w, c.killExecutorCommand(r.AppID, r.ExecutorID))
			reply.KilledExecutors = append(reply.KilledExecutors, wire.ExecutorRef{AppID: r.AppID, ExecutorID: r.ExecutorID})
		}
	}
	if recovering {
		// What the worker had by the records but no longer runs ended while
		// no master listened. (Only now: outside recovery a launch may
		// still be on its way to the worker.)
		for k, e := range w.executors {
			if !reported[k] {
				c.executorLost(e, "not running on its worker after the master changed")
			}
		}
	}
	for _, r := range report.Drivers {
		if !c.keepReportedDriver(w, r) {
			c.fx.send(w, killDriverCommand(c.epoch, r.DriverID))
			reply.KilledDrivers = append(reply.KilledDrivers, r.DriverID)
		}
	}
	if recovering {
		c.requeueUnlaunchedDrivers(w)
		w.state, w.reregistered = wire.WorkerAlive, false
		w.lastHeartbeat = c.now()
		c.log.Info("worker answered recovery", "worker", id, "executors", len(w.executors), "drivers", len(w.drivers))
		c.maybeCompleteRecovery()
	}
	c.schedule()
	return reply, nil
}

func (c *core) keepReportedExecutor(w *workerInfo, r wire.ExecutorReport, recovering bool) bool {
	a := c.apps[r.AppID]
	if r.State.Finished() {
		// An end no master acknowledged: apply it now; nothing to kill.
		if e := c.liveExecutor(a, r.ExecutorID); e != nil && e.worker == w && !e.launching {
			c.endExecutor(e, executorEnd{state: r.State, message: r.Message, exitCode: r.ExitCode, event: wire.EventExecutorUpdated}, nil)
		}
		return true
	}
	if a == nil {
		return false
	}
	if e, ok := a.executors[r.ExecutorID]; ok {
		if e.worker == w && !e.launching {
			if r.State == wire.ExecutorRunning && e.state != wire.ExecutorRunning {
				e.runningSince = c.now()
			}
			e.state = r.State
		}
		return e.worker == w && !e.launching
	}
	if !recovering || a.ending != nil || r.Cores <= 0 {
		return false
	}
	e := &executorInfo{app: a, id: r.ExecutorID, worker: w, cores: r.Cores, memory: r.MemoryMB, state: r.State}
	if r.State == wire.ExecutorRunning {
		e.runningSince = c.now()
	}
	a.executors[e.id] = e
	a.coresGranted += e.cores
	a.hosts[w.rec.ID] = struct{}{}
	a.nextExecID = max(a.nextExecID, e.id+1)
	w.addExecutor(e)
	return true
}

func (c *core) keepReportedDriver(w *workerInfo, r wire.DriverReport) bool {
	d := c.drivers[r.DriverID]
	if r.State.Finished() {
		// An end no master acknowledged: apply it, if the driver was ours
		// and ran here (a recovered driver knows its worker from its
		// launch record); nothing to kill.
		if d != nil && !d.launching && (d.worker == w || (d.worker == nil && d.rec.WorkerID == w.rec.ID)) {
			c.finishDriver(d, r.State, r.Message, r.ExitCode, nil)
		}
		return true
	}
	if d == nil || d.launching || (d.worker != nil && d.worker != w) {
		return false
	}
	if d.worker == nil {
		c.waitingDrivers = slices.DeleteFunc(c.waitingDrivers, func(x *driverInfo) bool { return x == d })
		d.worker = w
		w.addDriver(d)
	}
	d.state = wire.DriverRunning
	if d.rec.KillRequested {
		// Its kill was acknowledged under an earlier leader: finish it.
		c.fx.send(w, killDriverCommand(c.epoch, d.rec.ID))
	}
	return true
}

// requeueUnlaunchedDrivers puts back in the queue the drivers whose launch
// record names w's current process but which w does not run (nor report
// ended): the leader that wrote the record died before the launch reached
// the worker, so the driver never started, and waits again. A driver
// recorded on an earlier process of w was lost with it (driverLost, at
// the end of recovery).
func (c *core) requeueUnlaunchedDrivers(w *workerInfo) {
	if w.incarnation == "" {
		return
	}
	for _, d := range sortedDrivers(c.drivers) {
		if d.worker == nil && d.state == wire.DriverUnknown && d.rec.WorkerID == w.rec.ID && d.rec.WorkerIncarnation == w.incarnation {
			c.log.Info("driver's launch never reached its worker; it waits again", "driver", d.rec.ID, "worker", w.rec.ID)
			d.state = wire.DriverSubmitted
			c.waitingDrivers = append(c.waitingDrivers, d)
		}
	}
}

// liveExecutor is app a's live executor id, or nil.
func (c *core) liveExecutor(a *appInfo, id int) *executorInfo {
	if a == nil {
		return nil
	}
	return a.executors[id]
}

// removeWorker declares a worker DEAD. The worker's deletion and the end of
// every executor placed on it are one write; once durable, its executors
// are LOST (their apps told, their cores re-placed at once) and each of its
// drivers is relaunched elsewhere if supervised, or ends (driverLost), each
// through its own write. Until then the worker takes nothing new. done, if
// not nil, learns the outcome.
func (c *core) removeWorker(w *workerInfo, reason string, done func(error)) {
	if w.state == wire.WorkerDead {
		if done != nil {
			done(nil)
		}
		return
	}
	if w.removing != nil {
		w.removing.add(done)
		return
	}
	w.removing = &waiters{}
	w.removing.add(done)
	c.log.Warn("removing worker", "worker", w.rec.ID, "reason", reason, "executors", len(w.executors), "drivers", len(w.drivers))
	cmds := []persistence.Command{persistence.DeleteWorker(w.rec.ID)}
	for _, e := range sortedExecutors(w.executors) {
		cmds = append(cmds, persistence.DeleteExecutor(e.app.rec.ID, e.id))
	}
	c.commit(cmds, func() { c.workerRemoved(w, reason) }, func(err error) {
		ws := *w.removing
		if err != nil {
			c.log.Warn("removing worker failed; it stays as it was", "worker", w.rec.ID, "err", err)
			w.removing = nil
		}
		ws.finish(err)
	})
}

// workerRemoved applies a worker's durable removal.
func (c *core) workerRemoved(w *workerInfo, reason string) {
	if w.state == wire.WorkerDead || c.workers[w.rec.ID] != w {
		return
	}
	w.state = wire.WorkerDead
	w.deadSince = c.now()
	if c.workerByAddr[w.hostPort()] == w {
		delete(c.workerByAddr, w.hostPort())
	}
	c.deadAt[w.hostPort()] = append(c.deadAt[w.hostPort()], w.rec.ID)
	msg := "worker lost: " + reason
	for _, e := range sortedExecutors(w.executors) {
		c.executorEnded(e, executorEnd{state: wire.ExecutorLost, message: msg, event: wire.EventExecutorLost, note: msg})
	}
	for _, d := range sortedDrivers(w.drivers) {
		c.driverLost(d, msg)
	}
	c.schedule()
	c.maybeCompleteRecovery() // it may have been the last one to wait for
}

// expireWorkers removes ALIVE workers silent for the worker timeout and
// forgets DEAD ones after reaperIterations timeouts.
func (c *core) expireWorkers() {
	now := c.now()
	// Runs every tick over every worker: collect first, sort only the few
	// that go (in id order, so removals are deterministic).
	var silent []*workerInfo
	for _, w := range c.workers {
		switch w.state {
		case wire.WorkerAlive, wire.WorkerDecommissioned:
			if w.removing == nil && now.Sub(w.lastHeartbeat) > c.cfg.WorkerTimeout {
				silent = append(silent, w)
			}
		case wire.WorkerDead:
			if now.Sub(w.deadSince) > reaperIterations*c.cfg.WorkerTimeout {
				c.dropWorker(w)
			}
		}
	}
	slices.SortFunc(silent, func(a, b *workerInfo) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
	for _, w := range silent {
		c.removeWorker(w, fmt.Sprintf("no heartbeat for %s (timeout %s)", now.Sub(w.lastHeartbeat).Round(time.Millisecond), c.cfg.WorkerTimeout), nil)
	}
}

// putWorker adds a worker to the indexes.
func (c *core) putWorker(w *workerInfo) {
	c.workers[w.rec.ID] = w
	if w.state != wire.WorkerDead {
		c.workerByAddr[w.hostPort()] = w
	}
	c.workersByID = nil
}

// dropWorker forgets a DEAD worker for good.
func (c *core) dropWorker(w *workerInfo) {
	delete(c.workers, w.rec.ID)
	addr := w.hostPort()
	c.deadAt[addr] = slices.DeleteFunc(c.deadAt[addr], func(id string) bool { return id == w.rec.ID })
	if len(c.deadAt[addr]) == 0 {
		delete(c.deadAt, addr)
	}
	c.workersByID = nil
}

// aliveWorkers lists the ALIVE workers by id, but those being removed. The sorted list of all
// workers is kept until one is added or dropped, so a scheduling pass costs
// a scan, not a sort, of a large cluster.
func (c *core) aliveWorkers() []*workerInfo {
	if c.workersByID == nil {
		c.workersByID = sortedWorkers(c.workers)
	}
	out := make([]*workerInfo, 0, len(c.workersByID))
	for _, w := range c.workersByID {
		if w.schedulable() {
			out = append(out, w)
		}
	}
	return out
}

func sortedWorkers(m map[string]*workerInfo) []*workerInfo {
	return slices.SortedFunc(maps.Values(m), func(a, b *workerInfo) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
}

func sortedExecutors[K comparable](m map[K]*executorInfo) []*executorInfo {
	return slices.SortedFunc(maps.Values(m), func(a, b *executorInfo) int {
		if c := cmp.Compare(a.app.rec.ID, b.app.rec.ID); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
}

func sortedDrivers(m map[string]*driverInfo) []*driverInfo {
	return slices.SortedFunc(maps.Values(m), func(a, b *driverInfo) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
}
