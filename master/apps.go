package master

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
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
func (c *core) registerApp(desc wire.AppDescription, idem keyed, reply func(any, error)) {
	if !c.leading() {
		reply(nil, c.notLeader())
		return
	}
	if desc.MaxCores == 0 {
		desc.MaxCores = c.cfg.DefaultCores
	}
	if desc.MemoryPerExecutorMB == 0 {
		desc.MemoryPerExecutorMB = defaultMemoryPerExecutorMB
	}
	key := submissionKey{keyApp, idem.key}
	if c.answerRepeat(key, idem.hash, c.listedApp, reply) {
		return
	}
	rec := persistence.AppRecord{
		ID: c.newAppID(), Desc: desc, SubmittedAt: c.now(), State: wire.AppWaiting,
		ExecutorLimit: desc.InitialExecutorLimit, ExecutorIDsReserved: executorIDBlock,
		IdempotencyKey: idem.key, IdempotencyHash: idem.hash,
	}
	gen := c.gen
	c.beginKeyed(key, idem.hash)
	c.fx.persist([]persistence.Command{persistence.PutApp(rec, 0)}, func(err error) {
		if err != nil {
			err = c.persistErr(gen, err)
			reply(nil, err)
			c.endKeyed(key, "", err)
			return
		}
		// Durable: the app exists even if leadership moved meanwhile (the
		// new leader recovers it), so the client gets its id either way.
		reply(wire.Submitted{ID: rec.ID}, nil)
		c.endKeyed(key, rec.ID, nil)
		if gen != c.gen {
			return
		}
		c.rememberKey(key, rec.ID)
		a := newAppInfo(rec, wire.AppWaiting, c.now())
		a.idsDurable = rec.ExecutorIDsReserved
		c.apps[rec.ID] = a
		c.appOrder = append(c.appOrder, a)
		c.log.Info("registered app", "app", rec.ID, "name", desc.Name, "maxCores", desc.MaxCores, "coresPerExecutor", desc.CoresPerExecutor)
		c.schedule()
	})
}

// endApp ends an app on request: its client finished (FINISHED) or someone
// killed it (KILLED). The answer waits for the final record to be durable.
func (c *core) endApp(id string, state wire.AppState, msg string, reply func(any, error)) {
	if !c.leading() {
		reply(nil, c.notLeader())
		return
	}
	a := c.apps[id]
	if a == nil {
		if done := c.completedApp(id); done != nil {
			reply(appStatus(done), nil) // already over: nothing to do
			return
		}
		reply(nil, notFound("application", id))
		return
	}
	gen := c.gen
	c.removeApplication(a, state, msg, func(err error) {
		if err != nil {
			reply(nil, c.persistErr(gen, err))
			return
		}
		reply(appStatus(a), nil)
	})
}

// removeApplication ends an app: its executors are killed, its client told,
// the workers that ran it told to clean up, and its final record written.
func (c *core) removeApplication(a *appInfo, state wire.AppState, msg string, then func(error)) {
	if _, ok := c.apps[a.rec.ID]; !ok {
		return
	}
	c.log.Info("removing app", "app", a.rec.ID, "state", state, "reason", msg)
	delete(c.apps, a.rec.ID)
	c.appOrder = slices.DeleteFunc(c.appOrder, func(x *appInfo) bool { return x == a })
	granted := a.coresGranted
	for _, e := range sortedExecutors(a.executors) {
		c.killExecutor(e)
	}
	a.state, a.endedAt, a.message = state, c.now(), msg
	c.completedApps = appendBounded(c.completedApps, a, c.cfg.RetainedApps, func(old *appInfo) {
		c.forgetKey(submissionKey{keyApp, old.rec.IdempotencyKey}, old.rec.ID)
	})
	c.publish(a, wire.AppEvent{Type: wire.EventAppRemoved, App: appStatus(a), Message: msg})
	c.closeSubscribers(a)
	for _, wid := range sortedKeys(a.hosts) {
		if w := c.workers[wid]; w != nil && w.state != wire.WorkerDead {
			c.fx.send(w, workerCommand{path: "/v1/apps/finished", body: wire.ApplicationFinished{Epoch: c.epoch, AppID: a.rec.ID}, appID: a.rec.ID})
		}
	}
	rec := a.rec
	rec.State, rec.Message, rec.CoresGranted = state, msg, granted
	ended := a.endedAt
	rec.EndedAt = &ended
	a.rec = rec
	if then == nil {
		then = c.logPersistFailure("finish app " + a.rec.ID)
	}
	c.fx.persist([]persistence.Command{persistence.PutApp(rec, c.cfg.RetainedApps)}, then)
	c.schedule()
	c.maybeCompleteRecovery() // it may have been the last one to wait for
}

// killExecutor stops an executor now: its resources are free at once (as in
// Spark) and the worker is told to kill the process.
func (c *core) killExecutor(e *executorInfo) {
	e.worker.removeExecutor(e)
	e.state = wire.ExecutorKilled
	c.retireExecutor(e, nil)
	c.fx.send(e.worker, c.killExecutorCommand(e.app.rec.ID, e.id))
}

func (c *core) killExecutorCommand(appID string, id int) workerCommand {
	return workerCommand{path: "/v1/executors/kill", body: wire.KillExecutor{Epoch: c.epoch, AppID: appID, ExecutorID: id}, appID: appID, execID: id}
}

// executorStateChanged applies a worker's report about one executor. A
// final state is acknowledged only once the executor's end is durable: the
// worker drops a report once acknowledged, and a new leader must not find
// the executor still placed. A RUNNING executor that stays up resets the
// app's failure count; a FAILED one adds to it (see executorEnded).
func (c *core) executorStateChanged(workerID string, m wire.ExecutorStateChanged, reply func(any, error)) {
	w, err := c.reportingWorker(workerID) // refuses too when not leading
	if err != nil {
		reply(nil, err)
		return
	}
	a := c.apps[m.AppID]
	var e *executorInfo
	if a != nil {
		e = a.executors[m.ExecutorID]
	}
	if e == nil || e.worker != w {
		if !m.State.Finished() {
			// Running, but no master accounts for it: stop it.
			c.fx.send(w, c.killExecutorCommand(m.AppID, m.ExecutorID))
		}
		reply(nil, notFound("executor", fmt.Sprintf("%s/%d", m.AppID, m.ExecutorID)))
		return
	}
	if m.State == wire.ExecutorRunning && e.state != wire.ExecutorRunning {
		e.runningSince = c.now()
	}
	e.state, e.message, e.exitCode = m.State, m.Message, m.ExitCode
	c.publish(a, wire.AppEvent{Type: wire.EventExecutorUpdated, Executor: executorStatus(e)})
	if !m.State.Finished() {
		reply(struct{}{}, nil)
		return
	}
	c.executorEnded(e, c.ack(reply))
}

// ack turns a reply into the continuation of a write: success once durable,
// else the error a client must see.
func (c *core) ack(reply func(any, error)) func(error) {
	gen := c.gen
	return func(err error) {
		if err != nil {
			reply(nil, c.persistErr(gen, err))
			return
		}
		reply(struct{}{}, nil)
	}
}

// executorStableAfter is how long an executor must stay RUNNING to prove the
// app's command works. A worker reports RUNNING as soon as the process
// starts, so a command that exits non-zero at once is RUNNING for a moment
// every time: resetting the failure count on that moment would relaunch it
// forever (the loop SPARK-27510 set out to stop).
const executorStableAfter = 5 * time.Second

// executorEnded frees a finished executor and applies the retry limit:
// FAILED executors count; an executor that ran stably resets the count; an
// app that reaches --max-executor-retries with no stably running executor
// ends FAILED.
func (c *core) executorEnded(e *executorInfo, then func(error)) {
	a := e.app
	e.worker.removeExecutor(e)
	c.retireExecutor(e, then)
	if c.stable(e) {
		a.retryCount = 0
	}
	if e.state == wire.ExecutorFailed {
		a.retryCount++
		if limit := c.cfg.MaxExecutorRetries; limit >= 0 && a.retryCount >= limit && !c.hasStableExecutor(a) {
			c.removeApplication(a, wire.AppFailed, fmt.Sprintf("%d executors failed in a row with none running (last: %s)", a.retryCount, e.message), nil)
			return
		}
	}
	c.schedule()
}

// stable reports whether e has been RUNNING for executorStableAfter.
func (c *core) stable(e *executorInfo) bool {
	return !e.runningSince.IsZero() && c.now().Sub(e.runningSince) >= executorStableAfter
}

func (c *core) hasStableExecutor(a *appInfo) bool {
	for _, e := range a.executors {
		if e.state == wire.ExecutorRunning && c.stable(e) {
			return true
		}
	}
	return false
}

// resetRetries clears the failure count of apps with an executor that has
// proved it runs (called from tick).
func (c *core) resetRetries() {
	for _, a := range c.appOrder {
		if a.retryCount > 0 && c.hasStableExecutor(a) {
			a.retryCount = 0
		}
	}
}

// setExecutorLimit is dynamic allocation's request for a total number of
// executors. The scheduler follows it at once; the answer waits until it is
// durable.
func (c *core) setExecutorLimit(id string, limit int, reply func(any, error)) {
	a, err := c.activeApp(id)
	if err != nil {
		reply(nil, err)
		return
	}
	a.rec.ExecutorLimit = &limit
	c.schedule()
	gen := c.gen
	c.persistApp(a, func(err error) {
		if err != nil {
			reply(nil, c.persistErr(gen, err))
			return
		}
		reply(wire.ExecutorLimit{Limit: limit}, nil)
	})
}

// persistApp writes the app's desired record as it is now; once committed,
// the reservation it carried is durable.
func (c *core) persistApp(a *appInfo, then func(error)) {
	rec, gen := a.rec, c.gen
	c.fx.persist([]persistence.Command{persistence.PutApp(rec, 0)}, func(err error) {
		if err == nil && gen == c.gen && c.apps[rec.ID] == a {
			a.idsDurable = max(a.idsDurable, rec.ExecutorIDsReserved)
		}
		then(err)
	})
}

// killExecutors kills chosen executors of an app (dynamic allocation) and
// answers with the ids it killed; unknown ids are skipped.
func (c *core) killExecutors(id string, ids []int) (wire.KillExecutors, error) {
	a, err := c.activeApp(id)
	if err != nil {
		return wire.KillExecutors{}, err
	}
	killed := []int{}
	for _, eid := range ids {
		if e, ok := a.executors[eid]; ok {
			c.killExecutor(e)
			c.publish(a, wire.AppEvent{Type: wire.EventExecutorUpdated, Executor: executorStatus(e), Message: "killed by request"})
			killed = append(killed, eid)
		}
	}
	c.schedule()
	return wire.KillExecutors{ExecutorIDs: killed}, nil
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
		return nil, httpx.Errorf(http.StatusConflict, "application %s has ended", id)
	}
	return nil, notFound("application", id)
}

func (c *core) completedApp(id string) *appInfo {
	for _, a := range c.completedApps {
		if a.rec.ID == id {
			return a
		}
	}
	return nil
}

// acknowledge records that an app's client answered a new leader.
func (c *core) acknowledge(a *appInfo) {
	a.state = wire.AppWaiting
	c.log.Info("app client answered recovery", "app", a.rec.ID)
	c.maybeCompleteRecovery()
}

// expireApps finishes apps whose client has been gone for --app-timeout:
// no event stream open and no heartbeat. UNKNOWN apps are left to recovery.
func (c *core) expireApps() {
	now := c.now()
	// Runs every tick: collect first (removing edits appOrder), then remove.
	var gone []*appInfo
	for _, a := range c.appOrder {
		if a.state != wire.AppUnknown && len(a.subs) == 0 && now.Sub(a.lastSeen) > c.cfg.AppTimeout {
			gone = append(gone, a)
		}
	}
	for _, a := range gone {
		c.removeApplication(a, wire.AppFinished, fmt.Sprintf("client gone for more than %s", c.cfg.AppTimeout), nil)
	}
}

// ensureExecutorIDs makes sure a has need executor ids durably reserved
// beyond the ones it used, and reports whether it has them now. If not, it
// writes a larger reservation (need plus a block, so that steady growth
// costs few writes) whose continuation schedules again.
func (c *core) ensureExecutorIDs(a *appInfo, need int) bool {
	if a.idsDurable-a.nextExecID >= need {
		return true
	}
	if a.reserving {
		return false
	}
	a.rec.ExecutorIDsReserved = max(a.rec.ExecutorIDsReserved, min(a.nextExecID+need+executorIDBlock, maxExecutorID))
	a.reserving = true
	c.persistApp(a, func(err error) {
		a.reserving = false
		if err != nil {
			c.log.Error("reserving executor ids failed", "app", a.rec.ID, "err", err)
		}
		c.schedule() // with the ids, or to try again
	})
	return false
}

// maxExecutorID bounds executor ids (and so every sum made of them).
const maxExecutorID = 1 << 31

// appendBounded appends x and drops the oldest beyond limit, telling drop.
func appendBounded[T any](list []T, x T, limit int, drop func(T)) []T {
	list = append(list, x)
	if limit > 0 && len(list) > limit {
		for _, old := range list[:len(list)-limit] {
			drop(old)
		}
		list = slices.Delete(list, 0, len(list)-limit)
	}
	return list
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
