package master

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// executorIDBlock is how many executor ids a leader reserves for an app at a
// time (one write per block). A new leader skips past every reserved id, so
// an id is never given to two executors of an app, whatever was lost in a
// failover.
const executorIDBlock = 64

// registerApp registers an application; it exists (and is answered) once its
// record is durable.
// A repeat of a keyed registration gets the first one's id instead.
func (c *core) registerApp(desc wire.AppDescription, idem keyed, reply reply[wire.Submitted]) {
	if desc.MaxCores == 0 {
		desc.MaxCores = c.cfg.DefaultCores
	}
	if desc.MemoryPerExecutorMB == 0 {
		desc.MemoryPerExecutorMB = defaultMemoryPerExecutorMB
	}
	if d := c.drivers[idem.owner]; d != nil && desc.Queue == "" {
		desc.Queue = d.rec.Desc.Queue // a driver's apps run in its queue
	}
	if err := c.placeInQueue(idem.tenant, &desc.ProcessSpec); err != nil {
		reply.fail(err)
		return
	}
	key := submissionKey{keyApp, idem.key}
	if !c.admitKeyed(key, idem.hash, reply) {
		return
	}
	rec := persistence.AppRecord{
		ID: c.newAppID(), Desc: desc, SubmittedAt: c.now(), State: wire.AppWaiting,
		ExecutorLimit: desc.InitialExecutorLimit, ExecutorIDsReserved: executorIDBlock,
		IdempotencyKey: idem.key, IdempotencyHash: idem.hash, Owner: idem.owner, Tenant: idem.tenant, UnixUser: c.unixUserOfSubmitter(idem),
	}
	reply = c.registering.submitting(desc.Queue, idem.tenant, reply)
	c.commitKeyed(key, rec.ID, persistence.PutApp(rec, 0), func() {
		c.rememberKey(key, rec.ID)
		a := newAppInfo(rec, wire.AppWaiting, c.now())
		c.apps[rec.ID] = a
		c.appOrder = append(c.appOrder, a)
		c.log.Info("registered app", "app", rec.ID, "name", desc.Name, "maxCores", desc.MaxCores, "coresPerExecutor", desc.CoresPerExecutor)
		c.schedule()
	}, reply)
}

// updateApp writes a's record as change makes it, after the writes of a
// already in flight. Once durable, a.rec is the written record and apply
// runs (if this leadership goes on); done learns the outcome. A write that
// finds the app gone (ended, or this leadership over) by its turn is not
// made.
func (c *core) updateApp(a *appInfo, retain int, change func(*persistence.AppRecord), apply func(), done func(error)) {
	c.appRecord(a, retain).write(c, recordChange[persistence.AppRecord]{edit: change, apply: apply, done: done})
}

// appRecord is a's record as its writes need it (retain: how many
// completed apps the write keeps).
func (c *core) appRecord(a *appInfo, retain int) record[persistence.AppRecord] {
	return record[persistence.AppRecord]{
		rec: &a.rec, queue: &a.writes,
		listed: func() bool { return c.apps[a.rec.ID] == a },
		gone:   func() error { return c.appGone(a) },
		put: func(r persistence.AppRecord) []persistence.Command {
			return []persistence.Command{persistence.PutApp(r, retain)}
		},
	}
}

// endApp ends an app on request: its client finished (FINISHED) or someone
// killed it (KILLED). The answer waits for the final record to be durable;
// an app that already ended answers its final status.
func (c *core) endApp(id string, state wire.AppState, msg string, reply reply[wire.AppStatus]) {
	a := toEnd(c, c.apps[id], c.completedApp, appStatus, "application", id, reply)
	if a == nil {
		return
	}
	c.finishApp(a, state, msg, answerWrite(reply, func() wire.AppStatus { return *endedAppStatus(a) }))
}

// endedAppStatus is the status of an app whose end is durable: from the
// master's memory, or from the final record if this leadership ended
// before applying it.
func endedAppStatus(a *appInfo) *wire.AppStatus {
	if a.state.Finished() {
		return appStatus(a)
	}
	st := recordAppStatus(&a.rec)
	return &st
}

// finishApp ends an app: its final record is written; once that is durable
// its executors are killed, its client told, and the workers that ran it
// told to clean up. Until then the app is listed as it was and gets no new
// executors; further requests to end it wait for this one's outcome, and a
// failed end leaves the app as it was. done may be nil.
func (c *core) finishApp(a *appInfo, state wire.AppState, msg string, done func(error)) {
	if joinEnding(&a.ending, done) {
		return
	}
	c.log.Info("ending app", "app", a.rec.ID, "state", state, "reason", msg)
	endedAt := c.now()
	c.updateApp(a, c.cfg.RetainedApps, func(rec *persistence.AppRecord) {
		rec.State, rec.Message, rec.CoresGranted = state, msg, a.coresShown()
		rec.Executors = finalExecutors(a, state, msg)
		rec.EndedAt = &endedAt
		rec.Desc.Env = nil // a completed record keeps no environment (secrets, bulk)
	}, func() {
		c.appEnded(a, state, msg, endedAt)
	}, func(err error) { c.endingWritten(&a.ending, err, "app", a.rec.ID) })
}

// finalExecutors is what an ending app's status lists, for its final
// record: the executors that ended, then those that run (killed by the
// end, saying so: endedWithApp), the last persistence.EndedExecutorsKept.
func finalExecutors(a *appInfo, state wire.AppState, msg string) []wire.ExecutorStatus {
	var out []wire.ExecutorStatus
	out = append(out, a.finished...)
	for _, e := range sortedExecutors(a.executors) {
		switch {
		case e.endingAs != nil: // its own end is being written first
			out = append(out, *e.endingAs)
		case !e.launching:
			st := *executorStatus(e)
			st.State, st.Message = wire.ExecutorKilled, endedWithApp(state, msg)
			out = append(out, persistence.BoundEndedStatus(st))
		}
	}
	return persistence.KeepLastEnded(out)
}

// endedWithApp is the reason of an executor killed because its app ended
// (state, for msg): "app killed: killed by request", "app finished:
// unregistered by its client", "app failed: ...". The status of such an
// executor showed KILLED with no reason at all.
func endedWithApp(state wire.AppState, msg string) string {
	why := "app " + strings.ToLower(string(state))
	if msg == "" {
		return why
	}
	return why + ": " + msg
}

// appEnded applies an app's durable end.
func (c *core) appEnded(a *appInfo, state wire.AppState, msg string, endedAt time.Time) {
	delete(c.apps, a.rec.ID)
	c.appOrder = slices.DeleteFunc(c.appOrder, func(x *appInfo) bool { return x == a })
	for _, e := range sortedExecutors(a.executors) {
		// The final record dropped their placements: end them in memory.
		e.worker.removeExecutor(e)
		e.state, e.message = wire.ExecutorKilled, endedWithApp(state, msg)
		a.retire(e, persistence.BoundEndedStatus(*executorStatus(e)))
		if !e.launching {
			c.fx.send(e.worker, c.killExecutorCommand(a.rec.ID, e.id))
		}
	}
	// Its executors as its final record lists them (finalExecutors): what
	// a later leader shows.
	a.finished = slices.Clone(a.rec.Executors)
	a.state, a.endedAt, a.message = state, endedAt, msg
	c.completedApps = appendBounded(c.completedApps, a, c.cfg.RetainedApps, func(old *appInfo) {
		c.forgetKey(submissionKey{keyApp, old.rec.IdempotencyKey}, old.rec.ID)
	})
	c.publish(a, wire.AppEvent{Type: wire.EventAppRemoved, App: appStatus(a), Message: msg})
	c.closeSubscribers(a)
	for _, wid := range sortedKeys(a.hosts) {
		if w := c.workers[wid]; w != nil && w.state != wire.WorkerDead {
			c.fx.send(w, commandOn(wire.WorkerAPI.AppFinished, wire.ApplicationFinished{Epoch: c.epoch, AppID: a.rec.ID}))
		}
	}
	c.schedule()
	c.maybeCompleteRecovery() // it may have been the last one to wait for
}

// setExecutorLimit is dynamic allocation's request for a total number of
// executors. It takes effect, is told to the app's streams (and its UI
// page) and is answered once durable; a limit set again to what it was is
// not told (dynamic allocation repeats its request). Each request is a
// write and an audit entry, as every acknowledged change is: what a
// tenant may write so is rationed (audit_budget.go), so looping it floods
// no log.
func (c *core) setExecutorLimit(id string, limit int, reply reply[wire.ExecutorLimit]) {
	a, err := c.activeApp(id)
	if err != nil {
		reply.fail(err)
		return
	}
	var was *int
	c.updateApp(a, 0, func(rec *persistence.AppRecord) { was, rec.ExecutorLimit = rec.ExecutorLimit, &limit }, func() {
		if was == nil || *was != limit {
			c.publish(a, wire.AppEvent{Type: wire.EventExecutorLimitChanged, Message: limitChange(was, limit)})
		}
	}, answerWrite(reply, func() wire.ExecutorLimit { return wire.ExecutorLimit{Limit: limit} }))
}

// limitChange says how an executor limit changed.
func limitChange(was *int, now int) string {
	if was == nil {
		return fmt.Sprintf("executor limit set to %d (was none)", now)
	}
	return fmt.Sprintf("executor limit set to %d (was %d)", now, *was)
}

// appHeartbeat keeps an app's lease for a client without an event stream.
func (c *core) appHeartbeat(id string) error {
	a, err := c.activeApp(id)
	if err != nil {
		return err
	}
	a.lastSeen = c.now()
	if a.state == wire.AppUnknown {
		c.acknowledge(a)
	}
	return nil
}

func (c *core) activeApp(id string) (*appInfo, error) {
	if !c.leading() {
		return nil, c.notLeader()
	}
	if a := c.apps[id]; a != nil {
		return a, nil
	}
	if c.completedApp(id) != nil {
		return nil, ended("application", id)
	}
	return nil, notFound("application", id)
}

// findApp is the app the master lists under id, active or completed; nil
// if none.
func (c *core) findApp(id string) *appInfo { return listed(c.apps, c.completedApps, id, appID) }

func (c *core) completedApp(id string) *appInfo { return listed(nil, c.completedApps, id, appID) }

func appID(a *appInfo) string { return a.rec.ID }

// acknowledge records that an app's client answered a new leader.
func (c *core) acknowledge(a *appInfo) {
	a.state = wire.AppWaiting
	if len(a.executors) > 0 && c.status == wire.MasterAlive {
		a.state = wire.AppRunning
	}
	c.log.Info("app client answered the new leader", "app", a.rec.ID)
	c.maybeCompleteRecovery()
	c.schedule() // an UNKNOWN app gets no executors; now it may
}

// ensureExecutorIDs makes sure a has need executor ids durably reserved
// beyond the ones it used, and reports whether it has them now. If not, it
// writes a larger reservation (reserveExecutorIDs) unless a write of a is
// in flight, whose outcome schedules again.
func (c *core) ensureExecutorIDs(a *appInfo, need int) bool {
	if a.rec.ExecutorIDsReserved-a.nextExecID >= need {
		return true
	}
	if !a.writes.busy && a.ending == nil {
		c.reserveExecutorIDs(a, need)
	}
	return false
}

// maxExecutorID bounds executor ids (and so every sum made of them).
const maxExecutorID = 1 << 31
