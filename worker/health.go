package worker

import (
	"fmt"
	"sync"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Health checks (docs/HEALTH.md): the worker runs each check of a process
// on its own timer while the process's attempt runs. A process is
// starting until every check has passed once, healthy after; a check that
// fails its count in a row, once its start period is over, makes the
// worker kill the attempt's whole cgroup, which ends FAILED with
// "unhealthy: check NAME: ..." (a supervised driver is restarted, as after
// any failure).

// checkState is one check's count, a pure state machine: observe applies
// one result at a time, with the time it came.
type checkState struct {
	check   wire.Check
	started time.Time // the attempt's start: the start period runs from it
	passed  bool      // once, at least
	fails   int       // in a row, outside the start period
}

// observe applies one result: ok, or failed. It reports whether this
// check has now failed its count (the process is unhealthy).
func (s *checkState) observe(ok bool, now time.Time) (unhealthy bool) {
	if ok {
		s.passed, s.fails = true, 0
		return false
	}
	if now.Sub(s.started) < s.check.StartPeriodD() {
		return false // failures in the start period do not count
	}
	s.fails++
	return s.fails >= s.check.FailuresN()
}

// attemptHealth is the checks of one attempt of a process.
type attemptHealth struct {
	mu     sync.Mutex
	checks []*checkState
	health wire.Health
	done   bool // unhealthy, or the attempt ended: no more results count
}

func newAttemptHealth(checks []wire.Check, started time.Time) *attemptHealth {
	h := &attemptHealth{health: wire.HealthStarting}
	for _, c := range checks {
		h.checks = append(h.checks, &checkState{check: c, started: started})
	}
	return h
}

// result applies check i's result (reason: why it failed) at now, and
// says what changed: the process's new health ("" if unchanged), and
// whether it is now unhealthy (then why).
func (h *attemptHealth) result(i int, ok bool, reason string, now time.Time) (changed wire.Health, unhealthy string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return "", ""
	}
	c := h.checks[i]
	if c.observe(ok, now) {
		h.done, h.health = true, wire.HealthUnhealthy
		return wire.HealthUnhealthy, fmt.Sprintf("unhealthy: check %s: %s", c.check.Name, reason)
	}
	next := wire.HealthHealthy
	for _, c := range h.checks {
		if !c.passed {
			next = wire.HealthStarting
		}
	}
	if next != h.health {
		h.health = next
		return next, ""
	}
	return "", ""
}

// stop ends the attempt's checks: later results are dropped.
func (h *attemptHealth) stop() {
	h.mu.Lock()
	h.done = true
	h.mu.Unlock()
}
