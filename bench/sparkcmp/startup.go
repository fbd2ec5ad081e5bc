package sparkcmp

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Figures of the start-up measure.
const (
	figContext     = "SparkContext created (s from spark-submit)"
	figFirstExec   = "first executor registered (s from spark-submit)"
	figNRegistered = "N executors registered (s from spark-submit)"
	figShortJob    = "short job, submitted to done (s)"
	figEndToEnd    = "end to end, spark-submit to its exit (s)"
)

func startupSection(n int) string {
	return fmt.Sprintf("1. Start-up: spark-submit to N = %d one-core executors registered", n)
}

// oneCoreExecutors is the same request on both systems: n executors of one
// core (standalone: cores.max / executor.cores; berth's plugin maps them
// to maxCores and coresPerExecutor).
func oneCoreExecutors(n int) []string {
	return []string{"spark.executor.cores=1", "spark.cores.max=" + strconv.Itoa(n)}
}

// startup times, for each N, spark-submit to N executors registered with
// the driver and a short job, alternating the systems round by round.
func (h *harness) startup(ctx context.Context) {
	for _, n := range h.cfg.startupExecutors {
		section := startupSection(n)
		h.rep.describe(section,
			fmt.Sprintf("An app asking for %d one-core executors (`--conf spark.executor.cores=1 --conf spark.cores.max=%d`) on %d workers of %d cores, "+
				"then a job of %d tasks that do nothing. Times are from the spark-submit process's start to the driver's SparkListenerExecutorAdded "+
				"(its time stamp: when the driver's scheduler backend registered the executor).", n, n, h.cfg.workers, h.cfg.workerCores, 2*n))
		for round := 1; round <= h.cfg.rounds && ctx.Err() == nil; round++ {
			for _, s := range h.systems() {
				if err := h.startupTrial(ctx, s, section, n, round); err != nil {
					h.rep.note(section, "round %d, %s: %v", round, s.name(), err)
					h.progress("start-up N=%d round %d %s: %v", n, round, s.name(), err)
				}
			}
		}
	}
}

func (h *harness) startupTrial(ctx context.Context, s system, section string, n, round int) error {
	if _, err := h.ready(ctx, s, section, 2*time.Minute); err != nil {
		return err
	}
	spec := appSpec{name: fmt.Sprintf("startup-n%d-r%d", n, round), executors: n, cores: n, conf: oneCoreExecutors(n),
		tasks: 2 * n, wait: h.cfg.appTimeout}
	a, err := h.submit(ctx, s, spec)
	if err != nil {
		return err
	}
	if err := a.waitExit(ctx, h.cfg.appTimeout); err != nil {
		return err
	}
	if !a.ok() {
		return fmt.Errorf("the app did not finish its job (exit %d); its log: %s", a.exitCode(), a.log)
	}
	evs := a.eventsNow()
	execs := executors(evs)
	up, _ := first(evs, "context")
	one, ok1 := firstLive(execs, 1, 0, time.Time{}, nil)
	all, okN := firstLive(execs, n, 0, time.Time{}, nil)
	js, _ := first(evs, "job-start")
	je, _ := first(evs, "job-end")
	if !ok1 || !okN {
		return fmt.Errorf("the driver saw %d executors, not %d; its log: %s", len(execs), n, a.log)
	}
	h.rep.seconds(section, figContext, s.name(), up.at.Sub(a.start))
	h.rep.seconds(section, figFirstExec, s.name(), one.Sub(a.start))
	h.rep.seconds(section, figNRegistered, s.name(), all.Sub(a.start))
	h.rep.seconds(section, figShortJob, s.name(), je.at.Sub(js.at))
	h.rep.seconds(section, figEndToEnd, s.name(), a.exitAt.Sub(a.start))
	h.progress("start-up N=%d round %d %s: %d registered after %.2fs, exit after %.2fs", n, round, s.name(), n,
		all.Sub(a.start).Seconds(), a.exitAt.Sub(a.start).Seconds())
	return nil
}
