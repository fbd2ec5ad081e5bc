package master

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// executors lists a's live executors.
func executors(a *appInfo) []*executorInfo { return sortedExecutors(a.executors) }

// endAll reports every live executor of a ended in state.
func (h *harness) endAll(a *appInfo, state wire.ExecutorState) {
	h.t.Helper()
	for _, e := range executors(a) {
		h.report(e, wire.ExecutorRunning, nil)
		h.report(e, state, intp(0))
	}
}

// Executors that end soon after starting, whatever their exit code, are
// relaunched after a delay that doubles (executors ending together count
// once) and the app's client is told; one that runs stably clears it.
func TestFastEndingExecutorsAreRelaunchedWithBackoff(t *testing.T) {
	h := newLeader(t, nil, "w1")
	a := h.addApp(wire.AppDescription{MaxCores: 2, CoresPerExecutor: 1})
	sub, _, err := h.c.subscribe(a.rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	delays := func() []string {
		var out []string
		for {
			select {
			case ev := <-sub.ch:
				if ev.Type == wire.EventRelaunchDelayed {
					out = append(out, ev.Message)
				}
			default:
				return out
			}
		}
	}
	if n := len(a.executors); n != 2 {
		t.Fatalf("%d executors at the start, want 2", n)
	}

	// Both executors end soon after starting, in state: one event says
	// the delay; none is relaunched within it, both right after.
	round := func(state wire.ExecutorState, inARow int, delay time.Duration) {
		t.Helper()
		h.endAll(a, state)
		want := fmt.Sprintf("(%d in a row): new executors wait %s", inARow, delay)
		if d := delays(); len(d) != 1 || !strings.Contains(d[0], want) {
			t.Errorf("events after %d fast ends: %q, want one saying %q", inARow, d, want)
		}
		h.pass(delay-100*time.Millisecond, "w1")
		if n := len(a.executors); n != 0 {
			t.Fatalf("%d executors within the backoff of %s", n, delay)
		}
		h.pass(200*time.Millisecond, "w1")
		if n := len(a.executors); n != 2 {
			t.Fatalf("%d executors once the backoff of %s passed, want 2", n, delay)
		}
	}
	round(wire.ExecutorExited, 1, 500*time.Millisecond) // exit 0 at once counts as much as a failure
	round(wire.ExecutorFailed, 2, time.Second)

	// Running stably clears it: the next end is relaunched at once.
	for _, e := range executors(a) {
		h.report(e, wire.ExecutorRunning, nil)
	}
	h.pass(executorStableAfter+time.Second, "w1")
	if a.fastEnds != 0 {
		t.Errorf("fast ends %d after running stably", a.fastEnds)
	}
	e := executors(a)[0]
	h.report(e, wire.ExecutorExited, intp(0))
	if n := len(a.executors); n != 2 {
		t.Errorf("%d executors after a stable one ended, want 2 (relaunched at once)", n)
	}
	if d := delays(); len(d) != 0 {
		t.Errorf("a stable executor's end delayed the relaunch: %q", d)
	}
}

// A person's kill -9 of executors just started (FAILED, cause signal) is
// no doing of the app's: their replacements start at once, with no
// relaunchDelayed event. A failure of the worker's own, fast, still
// delays the next (a worker failing every launch is not hammered).
func TestExecutorsKilledByASignalAreReplacedWithoutBackoff(t *testing.T) {
	h := newLeader(t, nil, "w1")
	a := h.addApp(wire.AppDescription{MaxCores: 2, CoresPerExecutor: 1})
	for _, e := range executors(a) {
		h.reportCaused(e, wire.ExecutorFailed, intp(137), wire.CauseSignal)
	}
	if n := len(a.executors); n != 2 || a.fastEnds != 0 || scheduler.BackingOff(a.backoffUntil, h.c.now()) {
		t.Errorf("after two executors were killed by a signal: %d executors (want 2, replaced at once), fast ends %d", n, a.fastEnds)
	}
	for _, e := range executors(a) {
		h.reportCaused(e, wire.ExecutorFailed, intp(1), wire.CauseWorker)
	}
	if !scheduler.BackingOff(a.backoffUntil, h.c.now()) || len(a.executors) != 0 {
		t.Errorf("after the worker failed to start two executors: backing off %v, %d executors; want a delay", scheduler.BackingOff(a.backoffUntil, h.c.now()), len(a.executors))
	}
}
