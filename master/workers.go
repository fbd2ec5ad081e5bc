package master

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

func (c *core) registered(duplicate bool) wire.RegisteredWorker {
	return wire.RegisteredWorker{
		MasterID: c.cfg.ID, Epoch: c.epoch, Duplicate: duplicate,
		HeartbeatIntervalMs: c.cfg.heartbeatInterval(len(c.workers)).Milliseconds(),
	}
}

// registerWorker follows Spark's rules: a known id that is not DEAD (a
// retry, or a worker answering a new leader during recovery) is accepted as
// a duplicate; a DEAD worker at the same host:port is dropped; a worker at
// the address of another live one is refused, unless that one is UNKNOWN
// (it was restarted during recovery), which the newcomer then replaces.
// The worker is acknowledged once its record is durable.
func (c *core) registerWorker(req wire.RegisterWorker, reply reply[wire.RegisteredWorker]) {
	if !c.leading() {
		reply.fail(c.notLeader())
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
				reply.fail(err)
				return
			}
			c.registerWorker(req, reply)
		})
		return
	}
	if err := c.addressTaken(req); err != nil {
		reply.fail(err)
		return
	}
	rec := persistence.WorkerRecord{ID: req.ID, Host: req.Host, Port: req.Port, Address: req.Address, Cores: req.Cores, MemoryMB: req.MemoryMB,
		Resources: req.Resources, PortRange: req.PortRange, Labels: req.Labels}
	gen := c.gen
	c.fx.persist(c.withAudit([]persistence.Command{persistence.PutWorker(rec)}), func(err error) {
		if err != nil {
			reply.fail(c.persistErr(gen, err))
			return
		}
		if gen != c.gen {
			reply.fail(errLeadershipLost(fmt.Errorf("registered, but with a master that no longer leads")))
			return
		}
		// The world may have moved while the write was in flight.
		if w, ok := c.workers[req.ID]; ok && w.state != wire.WorkerDead {
			if restarted(w, req) {
				reply.fail(httpx.Coded(http.StatusServiceUnavailable, wire.CodeNotCommitted, "worker %s registered twice at once; retry", req.ID))
				return
			}
			c.acceptKnownWorker(w, req)
			reply(c.registered(true), nil)
			return
		}
		if err := c.addressTaken(req); err != nil {
			c.fx.persist([]persistence.Command{persistence.DeleteWorker(req.ID)}, c.logPersistFailure("undo refused worker"))
			reply.fail(err)
			return
		}
		c.addWorker(rec, req.Incarnation)
		c.workers[req.ID].limits = req.Limits
		c.fx.resend(c.workers[req.ID])
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
	w.limits = req.Limits
	c.fx.resend(w) // it is back: what was being sent goes now, not after TCP's backoff
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
	return httpx.Coded(http.StatusConflict, wire.CodeAddressTaken, "worker %s is already registered at %s; refusing %s", old.rec.ID, old.hostPort(), req.ID)
}

func (c *core) addWorker(rec persistence.WorkerRecord, incarnation string) {
	addr := hostPort(rec.Host, rec.Port)
	// As Spark: first forget DEAD workers at this address, then retire an
	// UNKNOWN one there (it stays listed as DEAD for a while).
	for _, id := range slices.Clone(c.deadAt[addr]) { // dropWorker edits the list
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
	c.log.Info("registered worker", "worker", rec.ID, "address", rec.Address, "cores", rec.Cores, "memoryMB", rec.MemoryMB, "resources", len(rec.Resources))
	c.schedule()
}

// heartbeat refreshes a live worker. A worker the master does not know, has
// expired, or lost track of in a failover is told to register again.
func (c *core) heartbeat(id string, hb wire.Heartbeat) (wire.HeartbeatReply, error) {
	if !c.leading() {
		return wire.HeartbeatReply{}, c.notLeader()
	}
	w, ok := c.workers[id]
	if !ok || w.state == wire.WorkerDead || (w.state == wire.WorkerUnknown && !w.reregistered) {
		return wire.HeartbeatReply{Epoch: c.epoch, Reconnect: true}, nil
	}
	w.lastHeartbeat = c.now()
	c.metrics.heartbeats.Inc()
	c.noteDiskFull(w, hb.DiskFull)
	w.ports.SetBusy(hb.BusyPorts)
	return wire.HeartbeatReply{Epoch: c.epoch, HeartbeatIntervalMs: c.cfg.heartbeatInterval(len(c.workers)).Milliseconds()}, nil
}

// noteDiskFull records what w says of its work dir's space ("" when
// there is enough): a full one takes nothing new until space returns.
func (c *core) noteDiskFull(w *workerInfo, why string) {
	if why == w.diskFull {
		return
	}
	if why != "" {
		c.log.Warn("worker's disk is full: nothing new is placed on it", "worker", w.rec.ID, "why", why)
	} else {
		c.log.Info("worker has disk space again", "worker", w.rec.ID)
	}
	w.diskFull = why
	c.touched(w)
	c.schedule()
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
		c.touched(w)
		c.log.Info("worker decommissioned: shutting down", "worker", id)
	}
	c.auditAlone(c.req) // leader memory only, as a clear
	return nil
}

// workerLeft removes a worker that shut down, without waiting for its
// heartbeat timeout; it is answered once the removal is durable.
func (c *core) workerLeft(id string, reply reply[wire.None]) {
	w, err := c.liveWorker(id)
	if err != nil {
		reply.fail(err)
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

// putWorker adds a worker to the indexes.
func (c *core) putWorker(w *workerInfo) {
	if old := c.workers[w.rec.ID]; old != nil && old != w {
		c.slots.take(old)
	}
	c.workers[w.rec.ID] = w
	c.slots.give(w)
	w.touch = c.touched
	c.touched(w)
	if w.state != wire.WorkerDead {
		c.workerByAddr[w.hostPort()] = w
	}
	if i, found := c.workerPosition(w.rec.ID); found {
		c.workersByID[i] = w
	} else {
		c.workersByID = slices.Insert(c.workersByID, i, w)
	}
}

// workerPosition is where the worker with id is, or would be, in the list
// of workers by id.
func (c *core) workerPosition(id string) (int, bool) {
	return slices.BinarySearchFunc(c.workersByID, id, func(w *workerInfo, id string) int { return cmp.Compare(w.rec.ID, id) })
}

// dropWorker forgets a DEAD worker for good.
func (c *core) dropWorker(w *workerInfo) {
	delete(c.workers, w.rec.ID)
	c.touched(w)
	c.slots.take(w)
	addr := w.hostPort()
	c.deadAt[addr] = slices.DeleteFunc(c.deadAt[addr], func(id string) bool { return id == w.rec.ID })
	if len(c.deadAt[addr]) == 0 {
		delete(c.deadAt, addr)
	}
	if i, found := c.workerPosition(w.rec.ID); found {
		c.workersByID = slices.Delete(c.workersByID, i, i+1)
	}
}

// aliveWorkers lists the ALIVE workers by id, but those being removed (a
// scan, not a sort, of a large cluster).
func (c *core) aliveWorkers() []*workerInfo {
	all := c.sortedWorkerList()
	out := make([]*workerInfo, 0, len(all))
	for _, w := range all {
		if w.placeable() {
			out = append(out, w)
		}
	}
	return out
}

// touched marks a worker for the index (what placement sees of it
// changed) and makes the cached views of the workers stale.
func (c *core) touched(w *workerInfo) {
	c.dirty[w.rec.ID] = struct{}{}
	c.viewsStale()
}

// viewsStale drops the cached views alone: enough when what changed is
// only what status reads show (a launch's use becoming durable), not what
// placement sees, so the index need not take the worker out and back in.
func (c *core) viewsStale() { c.workerViews = workerViews{} }

// workerViews caches what status reads compute over every worker (their
// summary, the room waiting reasons are judged against) until a worker's
// capacity, use or state changes: a large fleet's heartbeats change none.
type workerViews struct {
	summary *wire.WorkerSummary
	rooms   scheduler.Rooms // the rooms waiting reasons are judged against
}

// workerSummary counts the workers by state, with their committed use.
func (c *core) workerSummary() wire.WorkerSummary {
	if c.workerViews.summary == nil {
		var s wire.WorkerSummary
		for _, w := range c.sortedWorkerList() { // a slice: walking 100,000 map entries costs more
			cores, memory := w.committedUse()
			s.Add(wire.WorkerStatus{State: w.state, Cores: w.rec.Cores, CoresUsed: cores, MemoryMB: w.rec.MemoryMB, MemoryUsedMB: memory})
			w.countResources(&s)
		}
		c.workerViews.summary = &s
	}
	s := *c.workerViews.summary
	s.Resources = slices.Clone(s.Resources) // the answer is encoded off the loop; the cache stays the loop's
	return s
}

// syncIndex puts the changed workers in the index again, or removes them if
// they take no new work (or are gone).
func (c *core) syncIndex() {
	for id := range c.dirty {
		if w := c.workers[id]; w != nil && w.placeable() {
			c.index.Put(placement.Worker{ID: id, CoresFree: w.coresFree(), MemoryFreeMB: w.memoryFree(), Resources: w.resourcesFree(), Tags: w.tags})
			c.capacity.put(w)
		} else {
			c.index.Delete(id)
			c.capacity.del(id)
		}
	}
	clear(c.dirty)
}

// sortedWorkerList is every worker by id. Adding or dropping a worker
// changes it in place (a copy of pointers, not a sort of the fleet): read
// it, do not keep it across a change, nor modify it.
func (c *core) sortedWorkerList() []*workerInfo { return c.workersByID }
