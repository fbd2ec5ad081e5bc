package sparkcmp

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// Figures of the burst measure.
const (
	figBurstRate     = "apps finished per second"
	figBurstFailed   = "apps that failed"
	figBurstAppWall  = "an app's spark-submit to exit, median (s)"
	figBurstCPU      = "active master's CPU time (s)"
	figBurstPeak     = "active master's peak RSS during the burst (MB)"
	figBurstRSS      = "active master's RSS before the burst (MB)"
	figBurstIdleCPU  = "active master's CPU time idle, before the burst (ms per s)"
	figBurstAppCPU   = "active master's CPU time per app, above its idle rate (ms)"
	figBurstCtlPlane = "whole control plane's CPU time: every master, and ZooKeeper (s)"
)

func burstSection(cfg *config) string {
	return fmt.Sprintf("5. Master throughput: %d applications in a burst", cfg.burstApps)
}

// burst submits --burst-apps real applications, --burst-concurrency at a
// time, per round and system, and reads the active master's CPU time and
// peak RSS from /proc around it.
func (h *harness) burst(ctx context.Context) {
	section := burstSection(h.cfg)
	h.rep.describe(section, fmt.Sprintf(
		"%d spark-submits, %d at a time, each an app of two one-core executors (`spark.executor.cores=1`, `spark.cores.max=2`) running a 2-task job "+
			"once both registered. Rate: apps that finished their job over the burst's wall time. The master's figures are read from /proc of the "+
			"process leading before the burst (its VmHWM reset through clear_refs first). With %d cores on the machine the spark-submit and "+
			"executor JVMs take most of it: the rate measures the whole path, masters included, not the master alone.",
		h.cfg.burstApps, h.cfg.burstConcurrency, h.hostCores))
	for round := 1; round <= h.cfg.burstRounds && ctx.Err() == nil; round++ {
		for _, s := range h.systems() {
			if err := h.burstTrial(ctx, s, section, round); err != nil {
				h.rep.note(section, "round %d, %s: %v", round, s.name(), err)
				h.progress("burst round %d %s: %v", round, s.name(), err)
			}
		}
	}
}

func (h *harness) burstTrial(ctx context.Context, s system, section string, round int) error {
	v, err := h.ready(ctx, s, section, 3*time.Minute)
	if err != nil {
		return err
	}
	active := v.active
	// The master's own cost with nothing to do (heartbeats, Raft, ZooKeeper
	// pings), over a window of its own: what the burst's CPU time holds
	// besides the apps.
	idleFrom := readUsage(active.pid())
	if !poll.Sleep(ctx, h.cfg.burstIdle) {
		return ctx.Err()
	}
	idleCPU := readUsage(active.pid()).cpu - idleFrom.cpu
	if err := resetPeak(active.pid()); err != nil {
		return fmt.Errorf("resetting the peak RSS of %s: %w", active.name, err)
	}
	before := readUsage(active.pid())
	ctlBefore := controlPlaneCPU(s)

	var (
		mu     sync.Mutex
		ok     int
		walls  []float64
		failed []string
	)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range h.cfg.burstConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				a, err := h.submit(ctx, s, appSpec{name: fmt.Sprintf("burst-r%d-%03d", round, i), executors: 2, cores: 2,
					conf: oneCoreExecutors(2), tasks: 2, wait: h.cfg.appTimeout})
				if err == nil {
					err = a.waitExit(ctx, h.cfg.appTimeout)
				}
				mu.Lock()
				switch {
				case err != nil:
					failed = append(failed, err.Error())
				case !a.ok():
					failed = append(failed, fmt.Sprintf("exit %d, %s", a.exitCode(), a.log))
				default:
					ok++
					walls = append(walls, a.exitAt.Sub(a.start).Seconds())
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range h.cfg.burstApps {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	after := readUsage(active.pid())
	if !after.present {
		return fmt.Errorf("the active master %s ended during the burst", active.name)
	}
	if v, err := s.status(ctx); err == nil && v.active != active {
		h.rep.note(section, "round %d, %s: the leading master changed during the burst (was %s)", round, s.name(), active.name)
	}
	h.rep.add(section, figBurstRate, s.name(), float64(ok)/elapsed.Seconds(), 2)
	h.rep.add(section, figBurstFailed, s.name(), float64(len(failed)), 0)
	if len(walls) > 0 {
		h.rep.add(section, figBurstAppWall, s.name(), summarize(walls).p50, 2)
	}
	h.rep.seconds(section, figBurstCPU, s.name(), after.cpu-before.cpu)
	h.rep.add(section, figBurstPeak, s.name(), after.peakMB, 0)
	h.rep.add(section, figBurstRSS, s.name(), before.rssMB, 0)
	idleRate := float64(idleCPU.Milliseconds()) / h.cfg.burstIdle.Seconds() // ms per s
	h.rep.add(section, figBurstIdleCPU, s.name(), idleRate, 1)
	if ok > 0 {
		above := float64((after.cpu - before.cpu).Milliseconds()) - idleRate*elapsed.Seconds()
		h.rep.add(section, figBurstAppCPU, s.name(), above/float64(ok), 1)
	}
	h.rep.seconds(section, figBurstCtlPlane, s.name(), controlPlaneCPU(s)-ctlBefore)
	for i, f := range failed {
		if i == 3 {
			h.rep.note(section, "round %d, %s: %d more apps failed", round, s.name(), len(failed)-i)
			break
		}
		h.rep.note(section, "round %d, %s: an app failed: %s", round, s.name(), f)
	}
	h.progress("burst round %d %s: %d of %d apps in %.1fs (%.2f/s); %s's CPU %.1fs, peak RSS %.0f MB", round, s.name(), ok, h.cfg.burstApps,
		elapsed.Seconds(), float64(ok)/elapsed.Seconds(), active.name, (after.cpu - before.cpu).Seconds(), after.peakMB)
	return nil
}

// controlPlaneCPU is the CPU time so far of every running master of s and
// of what they need (ZooKeeper): not its workers.
func controlPlaneCPU(s system) time.Duration {
	var sum time.Duration
	for _, d := range s.controlPlane() {
		if d.running() {
			sum += readUsage(d.pid()).cpu
		}
	}
	return sum
}
