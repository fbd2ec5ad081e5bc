package master

import (
	"fmt"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// launchExecutor places one executor of a on w. Its cores are taken at once,
// so the next placement does not reuse them, but the executor is neither
// shown nor launched until its placement record is durable: a new leader
// then knows where it runs, and a leader that cannot commit launches
// nothing. A placement that fails to commit gives its cores back.
func (c *core) launchExecutor(a *appInfo, w *workerInfo, cores, memory int, grants wire.ResourceGrants, ports map[string]int) {
	e := &executorInfo{app: a, id: a.nextExecID, worker: w, cores: cores, memory: memory, resources: grants, ports: ports,
		state: wire.ExecutorLaunching, launching: true, started: c.now(), seq: c.nextSeq()}
	a.adopt(e)
	rec := e.record()
	c.commit([]persistence.Command{persistence.PutExecutor(rec)}, func() {
		if !c.live(e) {
			return
		}
		e.launching = false
		c.viewsStale() // its committed use changed; adding it marked its worker for the index
		c.metrics.launches.Inc()
		a.hosts[w.rec.ID] = struct{}{}
		a.state = wire.AppRunning
		c.fx.send(w, commandOn(wire.WorkerAPI.LaunchExecutor, wire.LaunchExecutor{
			Epoch: c.epoch, MasterURL: c.cfg.Advertise, AppID: a.rec.ID, ExecutorID: e.id,
			Process: process(a.rec.Desc.Command, a.rec.Desc.Env, a.rec.Desc.ProcessSpec, a.rec.UnixUser, cores, memory, grants, e.ports),
		}))
		c.publish(a, wire.AppEvent{Type: wire.EventExecutorAdded, Executor: executorStatus(e)})
		c.tellDraining(e) // placed as its worker's drain was being written
	}, func(err error) {
		if err == nil || !c.live(e) || !e.launching {
			return
		}
		c.log.Error("executor placement not committed; its cores are free again", "app", a.rec.ID, "executor", e.id, "err", err)
		w.removeExecutor(e)
		delete(a.executors, e.id)
		a.coresGranted -= cores
		c.schedule()
	})
}

// live reports whether e is still a live executor of an active app.
func (c *core) live(e *executorInfo) bool {
	return c.apps[e.app.rec.ID] == e.app && e.app.executors[e.id] == e
}

// executorEnd is how an executor ended.
type executorEnd struct {
	state    wire.ExecutorState
	message  string
	exitCode *int
	event    wire.EventType // what the app's client is told
	note     string         // the event's message
	kill     bool           // the worker must still kill the process
	// cause: who a FAILED end is owed to (exclusions.go).
	cause wire.FailureCause
	// status is the executor's status as the end's write keeps it
	// (decided): what its app lists once the end applies.
	status *wire.ExecutorStatus
}

// decided is end with e's status as the end's write keeps it.
func (end executorEnd) decided(e *executorInfo) executorEnd {
	st := endedStatus(e, end)
	end.status = &st
	return end
}

// endExecutor writes an executor's end (its placement record goes); once
// durable the executor leaves its app and worker (executorEnded).
func (c *core) endExecutor(e *executorInfo, end executorEnd, done func(error)) {
	e.ending = true
	end = end.decided(e)
	e.endingAs = end.status
	c.commit(persistence.EndExecutor(e.app.rec.ID, *end.status), func() { c.executorEnded(e, end) }, func(err error) {
		if err != nil {
			e.ending, e.endingAs = false, nil // not durable: it runs on as it was
		}
		if done != nil {
			done(err)
		}
	})
}

// executorEnded applies an executor's durable end: its resources are free,
// its app's client told, and the retry limit applied: FAILED executors
// count; an executor that ran stably resets the count; an app that reaches
// --max-executor-retries with no stably running executor ends FAILED. An
// executor that another durable write ended first is left alone.
func (c *core) executorEnded(e *executorInfo, end executorEnd) {
	if !c.live(e) {
		return
	}
	a := e.app
	if end.status == nil {
		end = end.decided(e)
	}
	st := *end.status
	e.worker.removeExecutor(e)
	e.state, e.message, e.exitCode, e.cause = st.State, st.Message, st.ExitCode, st.Cause
	preempted := e.preemptedFor
	c.unmarkReclaimed(e)
	if preempted != "" && e.state == wire.ExecutorKilled {
		e.preemptedFor = preempted // its status says why
	}
	if !e.launching {
		c.metrics.executorEnds.WithLabelValues(string(end.state)).Inc()
	}
	a.retire(e, st)
	if end.kill && !e.launching {
		c.fx.send(e.worker, c.killExecutorCommand(a.rec.ID, e.id))
	}
	if !e.launching {
		c.publish(a, wire.AppEvent{Type: end.event, Executor: executorStatus(e), Message: end.note})
	}
	if c.stable(e) {
		a.retryCount = 0
	}
	c.noteExecutorEnd(e)
	c.restartGang(a, e) // a member gone on its own (or preempted) breaks the gang: scheduler.GangEnd
	if e.state == wire.ExecutorFailed {
		c.noteFailure(e.worker, a.rec.ID, a, e.message, end.cause)
		a.retryCount++
		switch limit := c.cfg.MaxExecutorRetries; {
		case a.rec.Desc.Restart != nil:
			c.applyRestartPolicy(a, e)
		case scheduler.RetriesExhausted(limit, a.retryCount, c.hasStableExecutor(a)):
			c.finishApp(a, wire.AppFailed, fmt.Sprintf("%d executors failed in a row with none running (last: %s)", a.retryCount, e.message), nil)
		}
	}
	c.schedule()
}

// endedStatus is e's status once end applies: what its app lists from
// then on, and what its ended record keeps for a later leader.
func endedStatus(e *executorInfo, end executorEnd) wire.ExecutorStatus {
	st := *executorStatus(e)
	st.State, st.Message, st.ExitCode, st.Cause = end.state, end.message, end.exitCode, end.cause
	if e.preemptedFor != "" && end.state == wire.ExecutorKilled {
		// One level: its worker's "killed by the master (exited with
		// code 143: ...)" nested inside read as two reasons.
		st.Message = "preempted " + e.preemptedFor
		if end.exitCode != nil {
			st.Message += fmt.Sprintf(" (exited with code %d)", *end.exitCode)
		}
	}
	return persistence.BoundEndedStatus(st)
}

// executorLost ends an executor whose process is gone without a report.
func (c *core) executorLost(e *executorInfo, msg string) {
	c.endExecutor(e, executorEnd{state: wire.ExecutorLost, message: msg, event: wire.EventExecutorLost, note: msg}, nil)
}

// executorStateChanged applies a worker's report about one executor. A
// final state is acknowledged only once the executor's end is durable: the
// worker drops a report once acknowledged, and a new leader must not find
// the executor still placed. A RUNNING executor that stays up resets the
// app's failure count; a FAILED one adds to it (see executorEnded).
func (c *core) executorStateChanged(workerID string, m wire.ExecutorStateChanged, reply reply[wire.None]) {
	w, err := c.reportingWorker(workerID) // refuses too when not leading
	if err != nil {
		reply.fail(err)
		return
	}
	var e *executorInfo
	if a := c.apps[m.AppID]; a != nil {
		e = a.executors[m.ExecutorID]
	}
	if e == nil || e.worker != w || e.launching {
		if !m.State.Finished() {
			// Running, but no master accounts for it: stop it.
			c.fx.send(w, c.killExecutorCommand(m.AppID, m.ExecutorID))
		}
		reply.fail(notFound("executor", fmt.Sprintf("%s/%d", m.AppID, m.ExecutorID)))
		return
	}
	if !m.State.Finished() {
		if m.State == wire.ExecutorRunning && e.state != wire.ExecutorRunning {
			e.runningSince = c.now()
		}
		event := wire.EventExecutorUpdated
		if m.Health == wire.HealthHealthy && e.health != wire.HealthHealthy {
			event = wire.EventExecutorHealthy
		}
		e.state, e.message, e.exitCode, e.health = m.State, m.Message, m.ExitCode, m.Health
		c.publish(e.app, wire.AppEvent{Type: event, Executor: executorStatus(e)})
		reply(wire.None{}, nil)
		return
	}
	event := wire.EventExecutorUpdated
	if m.Health == wire.HealthUnhealthy {
		e.health, event = wire.HealthUnhealthy, wire.EventExecutorUnhealthy
	}
	c.endExecutor(e, executorEnd{state: m.State, message: m.Message, exitCode: m.ExitCode, event: event, cause: m.Cause}, c.ack(reply))
}

// ack turns a reply into the done of a write: success once durable, else
// the error a client must see.
func (c *core) ack(reply reply[wire.None]) func(error) {
	return answerWrite(reply, func() wire.None { return wire.None{} })
}

// answerWrite turns a reply into the done of a write: what answer builds
// once it is durable, else the error a client must see.
func answerWrite[T any](reply reply[T], answer func() T) func(error) {
	return func(err error) {
		if err != nil {
			reply.fail(err)
			return
		}
		reply(answer(), nil)
	}
}

// killedOnRequest is the end of an executor its app asked to kill.
var killedOnRequest = executorEnd{state: wire.ExecutorKilled, message: "killed by its app's request", event: wire.EventExecutorUpdated, note: "killed by request", kill: true}

// killExecutors kills chosen executors of an app (dynamic allocation) and
// answers, once their ends are durable, with the ids it killed; ids the
// master does not list are skipped.
func (c *core) killExecutors(id string, ids []int, reply reply[wire.KillExecutors]) {
	a, err := c.activeApp(id)
	if err != nil {
		reply.fail(err)
		return
	}
	killed := []int{}
	var chosen []*executorInfo
	var ends []executorEnd
	var cmds []persistence.Command
	for _, eid := range ids {
		if e, ok := a.executors[eid]; ok && !e.launching {
			end := killedOnRequest.decided(e)
			e.endingAs = end.status
			chosen, ends = append(chosen, e), append(ends, end)
			killed = append(killed, eid)
			cmds = append(cmds, persistence.EndExecutor(a.rec.ID, *end.status)...)
		}
	}
	if len(chosen) == 0 {
		reply(wire.KillExecutors{ExecutorIDs: killed}, nil)
		return
	}
	c.commit(cmds, func() {
		for i, e := range chosen {
			c.executorEnded(e, ends[i])
		}
	}, func(err error) {
		if err != nil {
			for _, e := range chosen {
				e.endingAs = nil // not durable: they run on
			}
		}
		answerWrite(reply, func() wire.KillExecutors { return wire.KillExecutors{ExecutorIDs: killed} })(err)
	})
}

// stable reports whether e has been RUNNING long enough to prove its
// app's command works (scheduler.Stable).
func (c *core) stable(e *executorInfo) bool { return scheduler.Stable(e.runningSince, c.now()) }

func (c *core) hasStableExecutor(a *appInfo) bool {
	for _, e := range a.executors {
		if e.state == wire.ExecutorRunning && c.stable(e) {
			return true
		}
	}
	return false
}

// record is e's placement record, as a new leader must find it.
func (e *executorInfo) record() persistence.ExecutorRecord {
	return persistence.ExecutorRecord{AppID: e.app.rec.ID, ID: e.id, WorkerID: e.worker.rec.ID, Cores: e.cores, MemoryMB: e.memory,
		Resources: e.resources, StartedAt: e.started, Ports: e.ports, PreemptedFor: e.preemptedFor, ReclaimedFor: e.reclaimedFor}
}
