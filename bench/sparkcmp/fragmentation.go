package sparkcmp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Figures of the fragmentation measure, per case.
const (
	figFragSmallest = "smallest replacement executor (cores)"
	figFragCount    = "replacement executors"
)

const fragSection = "4. Fragmentation: the replacement executors' sizes after a worker's loss"

// fragCase is one way the app asks for its executors.
type fragCase struct {
	label string // as the report shows it
	short string // in the app's name
	conf  []string
}

// The fragmentation cases: the app without and with spark.executor.cores.
const (
	fragUnset = "unset"
	fragFixed = "fixed"
)

// fragCases are the cases --fragmentation-cases asks for, in its order.
func (h *harness) fragCases() []fragCase {
	maxCores := "spark.cores.max=" + strconv.Itoa(h.cfg.fragmentationCores)
	var out []fragCase
	for _, c := range h.cfg.fragmentationCases {
		if c == fragUnset {
			out = append(out, fragCase{unsetLabel, fragUnset, []string{maxCores}})
		} else {
			out = append(out, fragCase{fmt.Sprintf("`spark.executor.cores=%d`", h.cfg.fragmentationExecutorCores), fragFixed,
				[]string{maxCores, "spark.executor.cores=" + strconv.Itoa(h.cfg.fragmentationExecutorCores)}})
		}
	}
	return out
}

const unsetLabel = "`spark.executor.cores` unset"

// fragmentation starts an app of --fragmentation-cores cores, kills the
// worker holding most of them, and records the sizes of the executors
// that replace them, per case, round and system.
func (h *harness) fragmentation(ctx context.Context) {
	h.rep.describe(fragSection, fmt.Sprintf(
		"An app with `spark.cores.max=%d` on %d workers of %d cores; once it holds its cores, the worker holding most of them is killed "+
			"(with its executors) and the executors the app gets instead are listed with their cores. berth's masters run with `--min-core-unit %d`; "+
			"Spark has no such setting. The table lists each executor's cores, in the order they registered.",
		h.cfg.fragmentationCores, h.cfg.workers, h.cfg.workerCores, h.cfg.minCoreUnit))
	h.rep.table(fragSection, "| case | system | round | executors before (cores) | on the killed worker | replacements (cores) |", "| --- | --- | ---: | --- | --- | --- |")
	for _, fc := range h.fragCases() {
		for round := 1; round <= h.cfg.fragmentationRounds && ctx.Err() == nil; round++ {
			for _, s := range h.systems() {
				if err := h.fragTrial(ctx, s, fc, round); err != nil {
					h.rep.note(fragSection, "%s, round %d, %s: %v", fc.label, round, s.name(), err)
					h.progress("fragmentation %s round %d %s: %v", fc.label, round, s.name(), err)
				}
			}
		}
	}
}

func fragFigure(fc fragCase, name string) string { return fc.label + ": " + name }

func (h *harness) fragTrial(ctx context.Context, s system, fc fragCase, round int) error {
	if _, err := h.ready(ctx, s, fragSection, 2*time.Minute); err != nil {
		return err
	}
	cores := h.cfg.fragmentationCores
	name := fmt.Sprintf("frag-%s-r%d", fc.short, round)
	a, err := h.submit(ctx, s, appSpec{name: name, executors: 1, cores: cores, conf: fc.conf, hold: h.cfg.appTimeout, wait: h.cfg.appTimeout})
	if err != nil {
		return err
	}
	defer a.kill()
	if _, err := a.waitEvent(ctx, h.cfg.appTimeout, "ready"); err != nil {
		return err
	}
	before := liveAt(executors(a.eventsNow()), time.Now())
	i, ok := busiestHost(before, s.workerHosts())
	if !ok {
		return errors.New("the app has no executor on any worker")
	}
	host := s.workerHosts()[i]
	killAt, err := s.loseWorker(i, false)
	if err != nil {
		return err
	}
	notOnHost := func(e executor) bool { return e.host != host }
	waitErr := a.waitFor(ctx, h.cfg.appTimeout, fmt.Sprintf("its %d cores back", cores), func(evs []event) bool {
		_, back := firstLiveAfter(executors(evs), 0, cores, killAt, notOnHost)
		return back
	})
	a.release()
	exitErr := a.waitExit(ctx, time.Minute)
	restartErr := s.restartWorker(ctx, i)
	if err := errors.Join(waitErr, exitErr, restartErr); err != nil {
		return err
	}
	var lost, replaced []executor
	for _, e := range before {
		if e.host == host {
			lost = append(lost, e)
		}
	}
	for _, e := range executors(a.eventsNow()) {
		if e.added.After(killAt) {
			replaced = append(replaced, e)
		}
	}
	h.rep.table(fragSection, fmt.Sprintf("| %s | %s | %d | %s | %s | %s |", fc.label, s.name(), round,
		joinInts(coreCounts(before)), joinInts(coreCounts(lost)), joinInts(coreCounts(replaced))))
	if len(replaced) > 0 {
		h.rep.add(fragSection, fragFigure(fc, figFragSmallest), s.name(), float64(slices.Min(coreCounts(replaced))), 0)
	}
	h.rep.add(fragSection, fragFigure(fc, figFragCount), s.name(), float64(len(replaced)), 0)
	h.progress("fragmentation %s round %d %s: before %s, lost %s on %s, replaced by %s", fc.label, round, s.name(),
		joinInts(coreCounts(before)), joinInts(coreCounts(lost)), host, joinInts(coreCounts(replaced)))
	return nil
}

func joinInts(xs []int) string {
	if len(xs) == 0 {
		return "none"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " + ")
}
