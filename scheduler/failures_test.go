package scheduler

import (
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// An app is kept off a worker once two of its processes failed there
// within the window, for the exclusion's duration; another app's
// failures, and failures out of the window, do not count.
func TestExclusionAfterTwoFailuresOfOneAppWithinTheWindow(t *testing.T) {
	const d = 30 * time.Minute
	now := t0.Add(time.Hour)
	one := []Failure{{At: now, Owner: "A"}}
	if x, ok := ExclusionFor(one, "A", "exit 1", now, d); ok {
		t.Errorf("one failure excludes: %+v", x)
	}
	others := []Failure{{At: now.Add(-time.Minute), Owner: "B"}, {At: now, Owner: "A"}}
	if x, ok := ExclusionFor(others, "A", "exit 1", now, d); ok {
		t.Errorf("another app's failure counts: %+v", x)
	}
	aged := []Failure{{At: now.Add(-FailureWindow), Owner: "A"}, {At: now, Owner: "A"}}
	if x, ok := ExclusionFor(aged, "A", "exit 1", now, d); ok {
		t.Errorf("a failure a window ago counts: %+v", x)
	}
	two := []Failure{{At: now.Add(-FailureWindow + time.Second), Owner: "A"}, {At: now, Owner: "A", ByWorker: true}}
	x, ok := ExclusionFor(two, "A", "exit 1", now, d)
	want := "2 executors failed there within 10m0s (last: exit 1)"
	if !ok || !x.Until.Equal(now.Add(d)) || x.Reason != want {
		t.Errorf("two failures within the window: %+v, %v; want until %v, %q", x, ok, now.Add(d), want)
	}
	if x.Over(now.Add(d-time.Nanosecond)) || !x.Over(now.Add(d)) {
		t.Errorf("exclusion until %v: over just before %v, at it %v; want false, true", x.Until, x.Over(now.Add(d-time.Nanosecond)), x.Over(now.Add(d)))
	}
}

// A worker is unhealthy while it itself failed processes of three apps or
// drivers within the window; their own failures, one owner failing again,
// and failures out of the window do not make it so.
func TestUnhealthyAfterTheWorkerFailedThreeOwners(t *testing.T) {
	now := t0.Add(time.Hour)
	own := []Failure{{At: now, Owner: "a1"}, {At: now, Owner: "a2"}, {At: now, Owner: "a3"}}
	if why := Unhealthy(own, now); why != "" {
		t.Errorf("the processes' own failures: %q, want healthy", why)
	}
	again := []Failure{{At: now, Owner: "a1", ByWorker: true}, {At: now, Owner: "a1", ByWorker: true}, {At: now, Owner: "a2", ByWorker: true}}
	if why := Unhealthy(again, now); why != "" {
		t.Errorf("two owners, one twice: %q, want healthy", why)
	}
	three := []Failure{{At: now.Add(-time.Minute), Owner: "d1", ByWorker: true}, {At: now, Owner: "a2", ByWorker: true}, {At: now, Owner: "a1", ByWorker: true}}
	want := "the worker could not start processes of 3 apps or drivers within 10m0s (a1, a2, d1)"
	if why := Unhealthy(three, now); why != want {
		t.Errorf("three owners: %q, want %q", why, want)
	}
	if why := Unhealthy(three, now.Add(FailureWindow-time.Minute)); why != "" {
		t.Errorf("once the oldest left the window: %q, want healthy", why)
	}
}

// The round keeps an app off a worker exactly while its exclusion is not
// over: the master forgets it by the same rule.
func TestExclusionAppliesUntilItIsOver(t *testing.T) {
	until := t0.Add(time.Minute)
	a := &App{Excluded: map[string]Exclusion{"w1": {Until: until}}}
	if !a.excludes("w1", until.Add(-time.Nanosecond)) || a.excludes("w1", until) || a.excludes("w2", t0) {
		t.Errorf("excludes w1 before its end %v, at it %v, w2 %v; want true, false, false",
			a.excludes("w1", until.Add(-time.Nanosecond)), a.excludes("w1", until), a.excludes("w2", t0))
	}
}

func TestRelaunchBackoffDoubles(t *testing.T) {
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if got := RelaunchBackoff(i + 1); got != w {
			t.Errorf("backoff %d: %v, want %v", i+1, got, w)
		}
	}
	if got := RelaunchBackoff(40); got != RelaunchBackoffMax {
		t.Errorf("backoff 40: %v, want the cap %v", got, RelaunchBackoffMax)
	}
}

// An exit or failure soon after starting starts the backoff, and doubles
// it once the delay is over; ends within one delay count once; a stable
// run clears it; kills, losses and a stranger's signal leave it alone; the
// worker's own failures count.
func TestBackoffAfterAnExecutorsEnd(t *testing.T) {
	now := t0.Add(time.Hour)
	started := now.Add(-time.Second) // RUNNING, not for StableAfter
	b, delay := Backoff{}.AfterEnd(wire.ExecutorExited, wire.CauseProcess, started, now)
	if b.FastEnds != 1 || delay != RelaunchBackoffMin || !b.Until.Equal(now.Add(RelaunchBackoffMin)) {
		t.Fatalf("a fast exit: %+v, delay %v; want 1 fast end, %v", b, delay, RelaunchBackoffMin)
	}
	if again, delay := b.AfterEnd(wire.ExecutorFailed, wire.CauseProcess, time.Time{}, now.Add(100*time.Millisecond)); again != b || delay != 0 {
		t.Errorf("a second end within the delay: %+v, delay %v; want it counted once", again, delay)
	}
	later := b.Until
	b2, delay := b.AfterEnd(wire.ExecutorFailed, wire.CauseWorker, time.Time{}, later)
	if b2.FastEnds != 2 || delay != time.Second || !b2.Until.Equal(later.Add(time.Second)) {
		t.Errorf("a worker's failure once the delay is over: %+v, delay %v; want 2 fast ends, 1s", b2, delay)
	}
	for _, end := range []struct {
		state wire.ExecutorState
		cause wire.FailureCause
	}{{wire.ExecutorKilled, ""}, {wire.ExecutorLost, ""}, {wire.ExecutorFailed, wire.CauseSignal}, {wire.ExecutorExited, wire.CauseSignal}} {
		if got, delay := b2.AfterEnd(end.state, end.cause, time.Time{}, later.Add(time.Hour)); got != b2 || delay != 0 {
			t.Errorf("%s (cause %q): %+v, delay %v; want the backoff left as it was", end.state, end.cause, got, delay)
		}
	}
	stable := later.Add(time.Hour)
	if got, delay := b2.AfterEnd(wire.ExecutorFailed, wire.CauseProcess, stable.Add(-StableAfter), stable); got != (Backoff{}) || delay != 0 {
		t.Errorf("an end after a stable run: %+v, delay %v; want it cleared", got, delay)
	}
	if !Stable(stable.Add(-StableAfter), stable) || Stable(stable.Add(-StableAfter+time.Nanosecond), stable) || Stable(time.Time{}, stable) {
		t.Error("stable: want RUNNING for StableAfter, and never for an executor never RUNNING")
	}
}

// At a tick, a stable executor clears an app's backoff; a delay that is
// over is dropped, its fast ends kept so that the next one doubles.
func TestBackoffAtTick(t *testing.T) {
	now := t0.Add(time.Hour)
	b := Backoff{FastEnds: 3, Until: now.Add(time.Second)}
	if got, over := b.AtTick(false, now); got != b || over {
		t.Errorf("a delay not over: %+v, over %v; want it kept", got, over)
	}
	if got, over := b.AtTick(true, now); got != (Backoff{}) || over {
		t.Errorf("with a stable executor: %+v, over %v; want it cleared", got, over)
	}
	if got, over := b.AtTick(false, b.Until); got != (Backoff{FastEnds: 3}) || !over {
		t.Errorf("a delay over: %+v, over %v; want it dropped, 3 fast ends kept", got, over)
	}
	policy := Backoff{Until: now} // a restart policy's delay: no fast end
	if got, over := policy.AtTick(true, now); got != (Backoff{}) || !over {
		t.Errorf("a policy's delay over: %+v, over %v; want it dropped", got, over)
	}
	if got, over := (Backoff{}).AtTick(true, now); got != (Backoff{}) || over {
		t.Errorf("no backoff: %+v, over %v", got, over)
	}
}

func dur(d time.Duration) *wire.Duration { w := wire.Duration(d); return &w }

// A restart policy ends the app past its attempts (mode fail), or delays
// its new executors until the oldest failure leaves the interval (mode
// delay), and every failure by at least its delay, unless the app's
// backoff already waits longer; its attempts default to the master's
// --max-executor-retries (none when that is negative).
func TestRestartPolicyAfterAFailure(t *testing.T) {
	now := t0.Add(time.Hour)
	two := 2
	fail := wire.RestartPolicy{Attempts: &two, Interval: dur(10 * time.Minute), Delay: dur(time.Second)}
	r := AfterFailure(fail, 5, []time.Time{now.Add(-time.Minute)}, time.Time{}, now)
	if r.Fail || r.Attempts != 2 || len(r.Failures) != 2 || !r.WaitUntil.Equal(now.Add(time.Second)) {
		t.Errorf("the second failure of 2 attempts: %+v; want a wait of the delay, 2 failures kept", r)
	}
	if r := AfterFailure(fail, 5, []time.Time{now.Add(-time.Minute)}, now.Add(time.Minute), now); !r.WaitUntil.IsZero() {
		t.Errorf("a backoff that waits longer: wait until %v, want it left (zero)", r.WaitUntil)
	}
	if r := AfterFailure(fail, 5, []time.Time{now.Add(-2 * time.Minute), now.Add(-time.Minute)}, time.Time{}, now); !r.Fail || len(r.Failures) != 3 {
		t.Errorf("the third failure of 2 attempts: %+v; want the app to fail", r)
	}
	delay := fail
	delay.Mode = wire.RestartDelay
	oldest := now.Add(-2 * time.Minute)
	r = AfterFailure(delay, 5, []time.Time{oldest, now.Add(-time.Minute)}, time.Time{}, now)
	if r.Fail || !r.WaitUntil.Equal(oldest.Add(10*time.Minute)) {
		t.Errorf("mode delay past its attempts: %+v; want a wait until the oldest leaves the interval (%v)", r, oldest.Add(10*time.Minute))
	}
	if r := AfterFailure(wire.RestartPolicy{}, 3, nil, time.Time{}, now); r.Attempts != 3 || r.Fail {
		t.Errorf("no attempts set, --max-executor-retries 3: %+v", r)
	}
	if r := AfterFailure(wire.RestartPolicy{}, -1, nil, time.Time{}, now); r.Attempts != 0 || !r.Fail {
		t.Errorf("no attempts set, --max-executor-retries -1: %+v; want none allowed", r)
	}
}

// A driver's policy goes to its worker with every default filled in.
func TestResolveRestartFillsTheDefaults(t *testing.T) {
	if ResolveRestart(nil, 3) != nil {
		t.Error("no policy resolved to one")
	}
	p := ResolveRestart(&wire.RestartPolicy{}, -1)
	if p.Attempts == nil || *p.Attempts != 0 || p.Interval == nil || time.Duration(*p.Interval) != wire.DefaultRestartInterval ||
		p.Delay == nil || *p.Delay != 0 || p.Mode != wire.RestartFail {
		t.Errorf("resolved: %+v", p)
	}
	if p := ResolveRestart(&wire.RestartPolicy{Mode: wire.RestartDelay}, 4); *p.Attempts != 4 || p.Mode != wire.RestartDelay {
		t.Errorf("resolved with --max-executor-retries 4: attempts %d, mode %s", *p.Attempts, p.Mode)
	}
}

// A member's end restarts its gang only for an app that has one and asks
// gangRestart, once, while the app lives, and not for a member killed on
// purpose (a preempted one does restart it).
func TestGangEndRestarts(t *testing.T) {
	asks := GangEnd{Gang: 2, Restart: true}
	if !asks.Restarts() {
		t.Error("a gang that asks gangRestart, a member failed: want a restart")
	}
	for name, g := range map[string]GangEnd{
		"no gang":             {Restart: true},
		"no gangRestart":      {Gang: 2},
		"already restarting":  {Gang: 2, Restart: true, Restarting: true},
		"the app ending":      {Gang: 2, Restart: true, Ending: true},
		"killed by a request": {Gang: 2, Restart: true, Killed: true},
	} {
		if g.Restarts() {
			t.Errorf("%s: %+v restarts", name, g)
		}
	}
}

// The retry limit of an app without a restart policy: limit failures in a
// row end it unless one of its executors runs stably; a negative limit
// never does.
func TestRetriesExhausted(t *testing.T) {
	for _, c := range []struct {
		limit, retries int
		stable, want   bool
	}{
		{10, 9, false, false}, {10, 10, false, true}, {10, 12, false, true},
		{10, 10, true, false}, {-1, 1000, false, false}, {0, 0, false, true},
	} {
		if got := RetriesExhausted(c.limit, c.retries, c.stable); got != c.want {
			t.Errorf("limit %d, %d failures, stable %v: %v, want %v", c.limit, c.retries, c.stable, got, c.want)
		}
	}
}
