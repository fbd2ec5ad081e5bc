package sparkcmp

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// Figures of the failover measure.
const (
	figNewActive    = "a new master ALIVE (s after the signal)"
	figNewAppExec   = "a new app's first executor (s after the signal)"
	figNewAppTries  = "spark-submits until one got an executor"
	figBaseline     = "undisturbed: the same new app's first executor, before the signal (s from its spark-submit)"
	figNewAppExcess = "the new app's first executor less the undisturbed one's (s): what the failover cost it"
	figRunningJob   = "the running job's wall time (s)"
	figRunningEnded = "running jobs that finished (of the rounds)"
)

func failoverSection(scenario string) string {
	if scenario == scenarioTerm {
		return "3b. Master failover: graceful stop (SIGTERM) of the active master"
	}
	return "3a. Master failover: kill -9 of the active master"
}

// failover stops the active master with a job running, then submits a new
// app again and again until one gets an executor, per scenario, round and
// system; the stopped master is restarted as a standby.
func (h *harness) failover(ctx context.Context) {
	for _, scenario := range h.cfg.failoverScenarios {
		section := failoverSection(scenario)
		h.rep.describe(section, fmt.Sprintf(
			"Spark: two Masters with `spark.deploy.recoveryMode=ZOOKEEPER` (one ZooKeeper, tickTime %s); berth: three Raft masters. "+
				"An app of %d one-core executors runs a job of %d tasks of %s; %s into it the active master gets the signal, "+
				"and at once a new app (one executor, no job) is submitted, again each time one exits without an executor (at most %d, for %s). "+
				"The stopped master is then started again, as a standby.",
			h.cfg.zkTickTime, h.cfg.failoverExecutors, h.cfg.failoverTasks, h.cfg.taskTime, h.cfg.failoverKillAfter,
			h.cfg.failoverAttempts, h.cfg.failoverTimeout))
		for round := 1; round <= h.cfg.failoverRounds && ctx.Err() == nil; round++ {
			for _, s := range h.systems() {
				if err := h.failoverTrial(ctx, s, scenario, section, round); err != nil {
					h.rep.note(section, "round %d, %s: %v", round, s.name(), err)
					h.progress("failover %s round %d %s: %v", scenario, round, s.name(), err)
				}
			}
		}
	}
}

func (h *harness) failoverTrial(ctx context.Context, s system, scenario, section string, round int) error {
	v, err := h.ready(ctx, s, section, 3*time.Minute)
	if err != nil {
		return err
	}
	old := v.active
	// The new app's own start, undisturbed: what its time after the
	// signal holds besides the failover (its driver's and executor's
	// JVMs). The running app's first executor is no such baseline: it
	// has four to ask for, on a cluster still busy with the last round.
	baseline, baseErr := h.newAppStart(ctx, s, fmt.Sprintf("failover-%s-baseline-r%d", scenario, round))
	n := h.cfg.failoverExecutors
	running, err := h.submit(ctx, s, appSpec{name: fmt.Sprintf("failover-%s-running-r%d", scenario, round), executors: n, cores: n,
		conf: oneCoreExecutors(n), tasks: h.cfg.failoverTasks, taskMs: int(h.cfg.taskTime.Milliseconds()), wait: h.cfg.appTimeout})
	if err != nil {
		return err
	}
	defer running.kill()
	if _, err := running.waitEvent(ctx, h.cfg.appTimeout, "job-start"); err != nil {
		return err
	}
	if !poll.Sleep(ctx, h.cfg.failoverKillAfter) { // the fault's moment, not a wait for anything
		return ctx.Err()
	}
	sig := syscall.SIGKILL
	if scenario == scenarioTerm {
		sig = syscall.SIGTERM
	}
	old.signalled = true
	if err := old.proc.Signal(sig); err != nil {
		return fmt.Errorf("signalling the active master %s: %w", old.name, err)
	}
	signalAt := time.Now()
	activeAt := make(chan time.Time, 1)
	go func() {
		at, _ := waitNewActive(ctx, s, old, h.cfg.failoverTimeout)
		activeAt <- at // zero if none within the bound
	}()
	execAt, tries, newErr := h.newAppAfter(ctx, s, scenario, round, signalAt)
	runErr := running.waitExit(ctx, h.cfg.appTimeout)
	newActive := <-activeAt
	stopErr := waitStopped(old, time.Minute)
	restartErr := s.restartMaster(ctx, old)

	ended := 0.0
	if runErr == nil && running.ok() {
		ended = 1
		job, _ := jobWall(running)
		h.rep.seconds(section, figRunningJob, s.name(), job)
	} else {
		h.rep.note(section, "round %d, %s: the running job did not finish (exit %d); its log: %s", round, s.name(), running.exitCode(), running.log)
	}
	h.rep.add(section, figRunningEnded, s.name(), ended, 0)
	if !newActive.IsZero() {
		h.rep.seconds(section, figNewActive, s.name(), newActive.Sub(signalAt))
	}
	if newErr == nil {
		h.rep.seconds(section, figNewAppExec, s.name(), execAt.Sub(signalAt))
		h.rep.add(section, figNewAppTries, s.name(), float64(tries), 0)
	}
	if baseErr == nil {
		h.rep.seconds(section, figBaseline, s.name(), baseline)
		if newErr == nil {
			h.rep.seconds(section, figNewAppExcess, s.name(), execAt.Sub(signalAt)-baseline)
		}
	} else {
		h.rep.note(section, "round %d, %s: no undisturbed baseline: %v", round, s.name(), baseErr)
	}
	h.progress("failover %s round %d %s: %s stopped; new master ALIVE after %.2fs, a new app's executor after %.2fs (%d spark-submits); running job finished: %v",
		scenario, round, s.name(), old.name, secondsAfter(newActive, signalAt), secondsAfter(execAt, signalAt), tries, ended == 1)
	return errors.Join(newErr, stopErr, restartErr)
}

// newAppAfter submits a one-executor app, and another each time one exits
// without an executor, until one gets an executor: when it did, and how
// many spark-submits it took.
func (h *harness) newAppAfter(ctx context.Context, s system, scenario string, round int, since time.Time) (time.Time, int, error) {
	deadline := since.Add(h.cfg.failoverTimeout)
	var last error
	tries := 0
	for tries < h.cfg.failoverAttempts && time.Until(deadline) > 0 && ctx.Err() == nil {
		tries++
		left := time.Until(deadline)
		a, err := h.submit(ctx, s, appSpec{name: fmt.Sprintf("failover-%s-new-r%d-%d", scenario, round, tries), executors: 1, cores: 1,
			conf: oneCoreExecutors(1), wait: left})
		if err != nil {
			return time.Time{}, tries, err
		}
		ev, err := a.waitEvent(ctx, left, "added")
		if err == nil {
			_ = a.waitExit(ctx, time.Minute)
			return ev.at, tries, nil
		}
		last = err
		a.kill()
	}
	return time.Time{}, tries, fmt.Errorf("no new app got an executor within %s of the signal (%d spark-submits; the last: %w)", h.cfg.failoverTimeout, tries, last)
}

// newAppStart submits the new app of the failover (one executor, no job)
// on an undisturbed cluster: from its spark-submit to its executor.
func (h *harness) newAppStart(ctx context.Context, s system, name string) (time.Duration, error) {
	a, err := h.submit(ctx, s, appSpec{name: name, executors: 1, cores: 1, conf: oneCoreExecutors(1), wait: h.cfg.appTimeout})
	if err != nil {
		return 0, err
	}
	defer a.kill()
	ev, err := a.waitEvent(ctx, h.cfg.appTimeout, "added")
	if err != nil {
		return 0, err
	}
	if err := a.waitExit(ctx, time.Minute); err != nil {
		return 0, err
	}
	return ev.at.Sub(a.start), nil
}

// waitStopped waits for a signalled master to exit; past within it is
// killed, and that is an error (a graceful stop that hangs).
func waitStopped(d *daemon, within time.Duration) error {
	select {
	case <-d.proc.Done():
		return nil
	case <-time.After(within):
		d.proc.Kill()
		return fmt.Errorf("the master %s did not exit within %s of its signal: killed", d.name, within)
	}
}

// secondsAfter is t - since in seconds, for progress lines: -1 when t is
// unknown (zero).
func secondsAfter(t, since time.Time) float64 {
	if t.IsZero() {
		return -1
	}
	return t.Sub(since).Seconds()
}
