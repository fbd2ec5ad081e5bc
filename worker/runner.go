package worker

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// A runner goroutine owns a proc from its launch to its final report: it
// runs its attempts (attempt.go), restarts a supervised driver, and turns
// how it ended into a final state. kill reaches it from any goroutine.

// Kill reasons, in the final state's message.
const (
	reasonMaster   = "killed by the master"
	reasonAppEnded = "application finished"
	reasonShutdown = "worker shutting down"
)

// kill asks p to stop: SIGTERM to its process group now, SIGKILL after the
// grace period. It does not wait. It reports false if p had already ended or
// was being killed.
func (w *Worker) kill(p *proc, reason string) bool { return w.killWithGrace(p, reason, 0) }

// killWithGrace is kill with a grace of its own (0: --kill-grace).
func (w *Worker) killWithGrace(p *proc, reason string, grace time.Duration) bool {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	if p.ended || p.killReason != "" {
		return false
	}
	w.killLocked(p, reason, grace)
	return true
}

// killLocked starts p's kill; the caller holds procs.mu and has checked
// that p is neither ended nor being killed.
func (w *Worker) killLocked(p *proc, reason string, grace time.Duration) {
	p.killReason, p.killGrace = reason, grace
	close(p.killCh)
	w.terminateLocked(p)
}

// terminateLocked sends SIGTERM to p's running attempt, if any, and arms the
// SIGKILL for when the grace period is over and that attempt still runs.
func (w *Worker) terminateLocked(p *proc) {
	proc := p.process
	if proc == nil {
		return // not started yet, or between two runs: the runner sees killCh
	}
	grace := w.cfg.KillGrace
	if p.killGrace > 0 {
		grace = p.killGrace
	}
	w.procLog(p).Info("sending SIGTERM", "pid", proc.Pid, "grace", grace, "reason", p.killReason)
	p.signalLocked(syscall.SIGTERM)
	time.AfterFunc(grace, func() {
		w.procs.mu.Lock()
		defer w.procs.mu.Unlock()
		if p.process == proc {
			w.procLog(p).Warn("still running after the grace period; sending SIGKILL", "pid", proc.Pid, "grace", grace)
			p.signalLocked(syscall.SIGKILL)
		}
	})
}

func (w *Worker) runProc(p *proc) {
	if p.kind == kindExecutor {
		w.runExecutor(p)
	} else {
		w.runDriver(p)
	}
}

func (w *Worker) runExecutor(p *proc) {
	cmd, err := w.startAttempt(p, "")
	if err != nil {
		p.failedBy = causeOf(err)
		w.endExecutor(p, startFailureState(err, wire.ExecutorKilled, wire.ExecutorFailed))
		return
	}
	w.procs.setState(p, string(wire.ExecutorRunning))
	w.enqueueExecutor(wire.ExecutorStateChanged{AppID: p.appID, ExecutorID: p.execID, State: wire.ExecutorRunning})
	code, reason := w.wait(p, cmd)
	switch unhealthy := w.takeUnhealthy(p); {
	case memoryNote(p, code) != "":
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorFailed, &code, memoryNote(p, code)})
	case unhealthy != "" && reason == "":
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorFailed, &code, unhealthy})
	case reason != "":
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorKilled, &code, reason + " (" + DescribeExitCode(code) + ")"})
	case code == 0:
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorExited, &code, DescribeExitCode(code)})
	default:
		p.failedBy = signalled(code)
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorFailed, &code, DescribeExitCode(code)})
	}
}

// signalled is the cause of an exit with code that no kill of the
// worker's made: CauseSignal for a signal from outside the process
// (SIGKILL, SIGTERM, SIGINT, SIGHUP), else the process's own.
func signalled(code int) wire.FailureCause {
	switch code - 128 {
	case int(syscall.SIGKILL), int(syscall.SIGTERM), int(syscall.SIGINT), int(syscall.SIGHUP):
		return wire.CauseSignal
	}
	return wire.CauseProcess
}

func (w *Worker) runDriver(p *proc) {
	delay := w.cfg.DriverRestartMin
	note := ""
	var failures []time.Time // within its restart policy's interval
	for run := 1; ; run++ {
		cmd, err := w.startAttempt(p, note)
		if err != nil {
			p.failedBy = causeOf(err)
			w.endDriver(p, startFailureState(err, wire.DriverKilled, wire.DriverError))
			return
		}
		if run == 1 {
			w.procs.setState(p, string(wire.DriverRunning))
			w.enqueueDriver(wire.DriverStateChanged{DriverID: p.driverID, State: wire.DriverRunning})
		}
		began := time.Now()
		code, reason := w.wait(p, cmd)
		unhealthy := w.takeUnhealthy(p)
		switch {
		case memoryNote(p, code) != "" && !p.supervise:
			w.endDriver(p, ending[wire.DriverState]{wire.DriverFailed, &code, memoryNote(p, code)})
			return
		case unhealthy != "" && reason == "" && !p.supervise:
			w.endDriver(p, ending[wire.DriverState]{wire.DriverFailed, &code, unhealthy})
			return
		case reason != "":
			w.endDriver(p, ending[wire.DriverState]{wire.DriverKilled, &code, reason + " (" + DescribeExitCode(code) + ")"})
			return
		case code == 0:
			w.endDriver(p, ending[wire.DriverState]{wire.DriverFinished, &code, DescribeExitCode(code)})
			return
		case !p.supervise:
			p.failedBy = signalled(code)
			w.endDriver(p, ending[wire.DriverState]{wire.DriverFailed, &code, DescribeExitCode(code)})
			return
		}
		if time.Since(began) > w.cfg.DriverRestartMax {
			delay = w.cfg.DriverRestartMin // it ran long enough to count as healthy
		}
		why := DescribeExitCode(code)
		if unhealthy != "" {
			why = unhealthy
		}
		wait := delay
		if p.restart != nil {
			var fail bool
			var until time.Time
			failures, fail, until = p.restart.Verdict(p.restart.AttemptsOr(0), failures, time.Now())
			if fail {
				w.endDriver(p, ending[wire.DriverState]{wire.DriverFailed, &code, fmt.Sprintf("restart policy: %d failures within %s, more than its %d attempts (last: %s)",
					len(failures), p.restart.IntervalD(), p.restart.AttemptsOr(0), why)})
				return
			}
			wait = max(time.Until(until), w.cfg.DriverRestartMin)
		}
		w.procLog(p).Warn("supervised driver failed; restarting it", "why", why, "in", wait, "run", run+1)
		delay = wait
		t := time.NewTimer(delay)
		select {
		case <-p.killCh:
			t.Stop()
			w.endDriver(p, ending[wire.DriverState]{wire.DriverKilled, &code, w.killReason(p) + " while waiting to restart"})
			return
		case <-t.C:
		}
		delay = min(delay*2, w.cfg.DriverRestartMax)
		note = fmt.Sprintf("berth: driver %s %s; restarting it (run %d)\n", p.driverID, why, run+1)
	}
}

func (w *Worker) killReason(p *proc) string {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	return p.killReason
}

// ending is a final state with its exit code and message.
type ending[S ~string] struct {
	state    S
	exitCode *int
	message  string
}

// startFailureState is the final state of a process that did not start.
func startFailureState[S ~string](err error, killed, failed S) ending[S] {
	if errors.Is(err, errKilledBeforeStart) {
		return ending[S]{state: killed, message: err.Error()}
	}
	e := ending[S]{state: failed, message: "could not start: " + err.Error()}
	if code := startFailure(err); code != 0 && causeOf(err) == wire.CauseProcess {
		e.exitCode = &code
		e.message = fmt.Sprintf("could not start (%s): %v", DescribeExitCode(code), err)
	}
	return e
}

func (w *Worker) endExecutor(p *proc, e ending[wire.ExecutorState]) {
	if e.state == wire.ExecutorKilled && w.stoppedOutOfTouch(p) {
		// LOST: the masters count it so already, or will on hearing it.
		if e.exitCode == nil {
			e.message = w.killReason(p) + ": " + e.message
		}
		e.state = wire.ExecutorLost
	}
	health := w.healthOf(p)
	if health != wire.HealthUnhealthy || e.state != wire.ExecutorFailed {
		health = "" // only an unhealthy end says so
	}
	end(w, p, e, wire.ExecutorKilled, func(e ending[wire.ExecutorState]) {
		w.enqueueExecutor(wire.ExecutorStateChanged{AppID: p.appID, ExecutorID: p.execID,
			State: e.state, ExitCode: e.exitCode, Message: e.message, Health: health, Cause: p.failedBy})
	})
}

func (w *Worker) endDriver(p *proc, e ending[wire.DriverState]) {
	end(w, p, e, wire.DriverKilled, func(e ending[wire.DriverState]) {
		w.enqueueDriver(wire.DriverStateChanged{DriverID: p.driverID,
			State: e.state, ExitCode: e.exitCode, Message: e.message, OutOfTouch: w.stoppedOutOfTouch(p), Cause: p.failedBy})
	})
}

// end records p's final state e and has report queue it. A kill that came
// before the process ended (no exit code) says who killed it.
func end[S ~string](w *Worker, p *proc, e ending[S], killed S, report func(ending[S])) {
	if e.state == killed && e.exitCode == nil {
		e.message = w.killReason(p) + ": " + e.message
	}
	kind := kindName(p.kind)
	w.procLog(p).Info(kind+" ended", "state", e.state, "message", e.message)
	// The table first, so that GET /v1/state agrees with what the master
	// hears; done last, once the report is queued (shutdown waits on it).
	w.procs.setEnded(p, string(e.state))
	w.metrics.exits.WithLabelValues(kind, string(e.state)).Inc()
	report(e)
	close(p.done)
}

// killAll kills everything still running, in parallel, and waits for the
// final states (bounded: a process stuck in the kernel may not die even on
// SIGKILL). No launch is accepted afterwards.
func (w *Worker) killAll(ctx context.Context, reason string) {
	live := w.procs.live("", true)
	for _, p := range live {
		w.kill(p, reason)
	}
	for _, p := range live {
		select {
		case <-p.done:
		case <-ctx.Done():
			w.log.Error("processes did not end in time", "err", ctx.Err())
			return
		}
	}
}
