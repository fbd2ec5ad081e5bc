package sparkcmp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// Figures of the worker-loss measure.
const (
	figLossNoticed = "driver removed the lost executors (s after the kill)"
	figLossBack    = "executors back to N (s after the kill)"
	figLossJob     = "job wall time, a worker killed (s)"
	figLossCalm    = "job wall time, undisturbed (s)"
	figLossSlower  = "slowdown (killed / undisturbed)"
)

// The ways a worker is lost.
const (
	lossKill   = "kill"   // SIGKILL: the kernel closes its connections, peers see it at once
	lossFreeze = "freeze" // SIGSTOP: its connections stay open and silent, as a dead machine's
)

func lossSection(cfg *config, mode string) string {
	if mode == lossFreeze {
		return fmt.Sprintf("2b. Worker loss: a worker and its executors frozen (SIGSTOP: silent, as a machine that died) under a job (N = %d, worker timeout %s on both)",
			cfg.lossExecutors, cfg.workerTimeout)
	}
	return fmt.Sprintf("2a. Worker loss: kill -9 of a worker and its executors under a job (N = %d, worker timeout %s on both)",
		cfg.lossExecutors, cfg.workerTimeout)
}

// workerLoss runs, per round and system, the job undisturbed, then again
// for each --loss-modes with the worker holding most of its executors
// SIGKILLed or SIGSTOPped (with every process below it) --loss-kill-after
// into the job; then restarts it.
func (h *harness) workerLoss(ctx context.Context) {
	n := h.cfg.lossExecutors
	for _, mode := range h.cfg.lossModes {
		how := "get SIGKILL: the kernel closes their sockets, so whoever holds a connection to them sees it at once (a crashed process on a live machine)"
		if mode == lossFreeze {
			how = "get SIGSTOP: their sockets stay open and nothing answers, as when the machine dies or hangs; they are killed once the measure is done"
		}
		h.rep.describe(lossSection(h.cfg, mode),
			fmt.Sprintf("An app of %d one-core executors runs a job of %d tasks of %s each; %s after the job starts, the worker holding most of its executors "+
				"and every process below it (its executors) %s. Spark: `spark.worker.timeout=%d`; berth: `--worker-timeout %s`. "+
				"\"Back\" is the first time the driver has N executors again, not counting those of the lost worker, whether or not it has removed them yet.",
				n, h.cfg.lossTasks, h.cfg.taskTime, h.cfg.lossKillAfter, how, int(h.cfg.workerTimeout.Seconds()), h.cfg.workerTimeout))
	}
	for round := 1; round <= h.cfg.rounds && ctx.Err() == nil; round++ {
		for _, s := range h.systems() {
			calm, calmErr := h.lossUndisturbed(ctx, s, round)
			for _, mode := range h.cfg.lossModes {
				err := calmErr
				if err == nil {
					err = h.lossTrial(ctx, s, mode, round, calm)
				}
				if err != nil {
					h.rep.note(lossSection(h.cfg, mode), "round %d, %s: %v", round, s.name(), err)
					h.progress("worker loss (%s) round %d %s: %v", mode, round, s.name(), err)
				}
			}
		}
	}
}

// lossUndisturbed runs the job with nothing lost: its wall time.
func (h *harness) lossUndisturbed(ctx context.Context, s system, round int) (time.Duration, error) {
	if _, err := h.ready(ctx, s, lossSection(h.cfg, h.cfg.lossModes[0]), 2*time.Minute); err != nil {
		return 0, err
	}
	calm, err := h.submit(ctx, s, h.lossSpec(fmt.Sprintf("loss-undisturbed-r%d", round)))
	if err != nil {
		return 0, err
	}
	if err := calm.waitExit(ctx, h.cfg.appTimeout); err != nil {
		return 0, err
	}
	return jobWall(calm)
}

func (h *harness) lossSpec(name string) appSpec {
	n := h.cfg.lossExecutors
	return appSpec{name: name, executors: n, cores: n, conf: oneCoreExecutors(n), tasks: h.cfg.lossTasks,
		taskMs: int(h.cfg.taskTime.Milliseconds()), wait: h.cfg.appTimeout}
}

func (h *harness) lossTrial(ctx context.Context, s system, mode string, round int, calmJob time.Duration) error {
	section := lossSection(h.cfg, mode)
	if _, err := h.ready(ctx, s, section, 2*time.Minute); err != nil {
		return err
	}
	spec := h.lossSpec(fmt.Sprintf("loss-%s-r%d", mode, round))
	spec.hold = h.cfg.appTimeout // until the executors are back, even past the job's end
	a, err := h.submit(ctx, s, spec)
	if err != nil {
		return err
	}
	defer a.kill()
	if _, err := a.waitEvent(ctx, h.cfg.appTimeout, "job-start"); err != nil {
		return err
	}
	if !poll.Sleep(ctx, h.cfg.lossKillAfter) { // the fault's moment, not a wait for anything
		return ctx.Err()
	}
	i, ok := busiestHost(liveAt(executors(a.eventsNow()), time.Now()), s.workerHosts())
	if !ok {
		return errors.New("the app has no executor on any worker")
	}
	host := s.workerHosts()[i]
	killAt, err := s.loseWorker(i, mode == lossFreeze)
	if err != nil {
		return err
	}
	notOnHost := func(e executor) bool { return e.host != host }
	n := h.cfg.lossExecutors
	waitErr := a.waitFor(ctx, h.cfg.appTimeout, "its executors back and its job's end", func(evs []event) bool {
		_, back := firstLiveAfter(executors(evs), n, 0, killAt, notOnHost)
		_, ended := first(evs, "job-end")
		_, failed := first(evs, "job-failed")
		return back && (ended || failed)
	})
	a.release()
	exitErr := a.waitExit(ctx, time.Minute)
	restartErr := s.restartWorker(ctx, i)
	if err := errors.Join(waitErr, exitErr, restartErr); err != nil {
		return err
	}
	if !a.ok() {
		return fmt.Errorf("the job failed after the worker's loss (exit %d); its log: %s", a.exitCode(), a.log)
	}
	execs := executors(a.eventsNow())
	back, _ := firstLiveAfter(execs, n, 0, killAt, notOnHost)
	job, err := jobWall(a)
	if err != nil {
		return err
	}
	if noticed, ok := lostRemoved(execs, host, killAt); ok {
		h.rep.seconds(section, figLossNoticed, s.name(), noticed.Sub(killAt))
	} else {
		h.rep.note(section, "round %d, %s: the driver never removed the dead worker's executors", round, s.name())
	}
	h.rep.seconds(section, figLossBack, s.name(), back.Sub(killAt))
	h.rep.seconds(section, figLossJob, s.name(), job)
	h.rep.seconds(section, figLossCalm, s.name(), calmJob)
	h.rep.add(section, figLossSlower, s.name(), job.Seconds()/calmJob.Seconds(), 2)
	h.progress("worker loss (%s) round %d %s: lost %s; executors back after %.2fs; job %.1fs (undisturbed %.1fs)", mode, round, s.name(),
		host, back.Sub(killAt).Seconds(), job.Seconds(), calmJob.Seconds())
	return nil
}

// jobWall is the app's job from its start to its end, once it has exited.
func jobWall(a *app) (time.Duration, error) {
	evs := a.eventsNow()
	js, ok1 := first(evs, "job-start")
	je, ok2 := first(evs, "job-end")
	if !a.ok() || !ok1 || !ok2 {
		return 0, fmt.Errorf("%s app %s did not finish its job (exit %d); its log: %s", a.system, a.spec.name, a.exitCode(), a.log)
	}
	return je.at.Sub(js.at), nil
}

// lostRemoved is when the driver had removed the last of the executors
// that ran on host at the kill.
func lostRemoved(execs []executor, host string, killAt time.Time) (time.Time, bool) {
	var last time.Time
	found := false
	for _, e := range liveAt(execs, killAt) {
		if e.host != host {
			continue
		}
		if e.removed.IsZero() {
			return time.Time{}, false
		}
		last, found = maxTime(last, e.removed), true
	}
	return last, found
}
