package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// What failures decide (docs/HEALTH.md): bad workers avoided, the relaunch
// backoff and restart policies. These are rules over plain values; the
// master records what they read (each worker's recent failures, an app's
// fast ends and its policy's failures: the leader's memory, which a new
// leader starts without), calls them with its clock, and applies what they
// answer, which the next View carries (App.Excluded, Worker.Unhealthy,
// App.BackoffUntil). They live here, beside the rules that read their
// outcome, so that one package says what a failure does.

// Bad workers avoided (Spark's excludeOnFailure). A process of an app that
// fails on one worker FailuresExclude times within FailureWindow, whatever
// the cause, keeps that app's executors off the worker for the master's
// --exclude-duration: an app's own failures keep it, and only it, off. A
// worker where the worker itself failed processes of UnhealthyOwners apps
// or drivers within the window (wire.CauseWorker: it could not prepare or
// start them) takes nothing new, for anyone, until that passes or an
// operator clears it. A process's own exit, its checks, its memory or a
// port another process held are never counted against the worker: one
// tenant's failing apps benched a worker for every tenant.
const (
	FailureWindow   = 10 * time.Minute
	FailuresExclude = 2 // of one app on one worker
	UnhealthyOwners = 3 // apps or drivers the worker itself failed
)

// Failure is a process of Owner (an app's or a driver's id) that failed on
// a worker At; ByWorker: the worker's own failure (wire.CauseWorker).
type Failure struct {
	At       time.Time
	Owner    string
	ByWorker bool
}

// Counts reports whether f still counts against its worker at now.
func (f Failure) Counts(now time.Time) bool { return now.Sub(f.At) < FailureWindow }

// ExclusionFor is the exclusion of owner's app from a worker, given the
// worker's failures (the one just recorded included, for why), if they
// exclude it at now; d is how long an exclusion lasts.
func ExclusionFor(failures []Failure, owner, why string, now time.Time, d time.Duration) (Exclusion, bool) {
	n := 0
	for _, f := range failures {
		if f.Owner == owner && f.Counts(now) {
			n++
		}
	}
	if n < FailuresExclude {
		return Exclusion{}, false
	}
	reason := fmt.Sprintf("%d executors failed there within %s (last: %s)", n, FailureWindow, why)
	return Exclusion{Until: now.Add(d), Reason: reason}, true
}

// Unhealthy is why a worker with these failures takes nothing new at now,
// "" when it may: the worker itself failed processes of UnhealthyOwners
// apps or drivers (named, sorted) within the window.
func Unhealthy(failures []Failure, now time.Time) string {
	var owners []string
	for _, f := range failures {
		if f.ByWorker && f.Counts(now) && !slices.Contains(owners, f.Owner) {
			owners = append(owners, f.Owner)
		}
	}
	if len(owners) < UnhealthyOwners {
		return ""
	}
	slices.Sort(owners)
	return fmt.Sprintf("the worker could not start processes of %d apps or drivers within %s (%s)", len(owners), FailureWindow, strings.Join(owners, ", "))
}

// Over reports whether x has ended at now: the master forgets it, and the
// round no longer keeps the app off the worker (App.excludes).
func (x Exclusion) Over(now time.Time) bool { return !now.Before(x.Until) }

// Relaunch backoff. An app whose executors keep ending within seconds of
// starting, whatever their exit code (an executor that exits 0 at once was
// relaunched ~350 times a second, 7,139 work directories in 20 s), gets
// its next executors only after a delay that doubles with each such end,
// from RelaunchBackoffMin up to RelaunchBackoffMax. An executor that runs
// for StableAfter clears it. Ends within one delay count once: ten
// executors that fail together are one failure of the app, not ten.
const (
	RelaunchBackoffMin = 500 * time.Millisecond
	RelaunchBackoffMax = time.Minute
)

// StableAfter is how long an executor must stay RUNNING to prove its app's
// command works. A worker reports RUNNING as soon as the process starts,
// so a command that exits non-zero at once is RUNNING for a moment every
// time: resetting the failure count on that moment would relaunch it
// forever (the loop SPARK-27510 set out to stop).
const StableAfter = 5 * time.Second

// Stable reports whether an executor RUNNING since runningSince (zero:
// never) has run for StableAfter at now.
func Stable(runningSince, now time.Time) bool {
	return !runningSince.IsZero() && now.Sub(runningSince) >= StableAfter
}

// RelaunchBackoff is the delay after the n-th fast end in a row (n >= 1).
func RelaunchBackoff(n int) time.Duration {
	d := RelaunchBackoffMin
	for i := 1; i < n && d < RelaunchBackoffMax; i++ {
		d *= 2
	}
	return min(d, RelaunchBackoffMax)
}

// Backoff is an app's relaunch backoff: its fast ends in a row, and until
// when its new executors wait (zero: they do not; a restart policy's delay
// sets it too).
type Backoff struct {
	FastEnds int
	Until    time.Time
}

// AfterEnd is b once an executor of the app ended in state, for cause,
// having been RUNNING since runningSince (zero: never), at now; delay is
// the wait that end started or doubled (zero: none). An exit or failure
// soon after starting starts or doubles it, one that ran stably clears it.
// Kills and losses are not the app's doing and leave it as it is; so does
// a signal no part of berth sent (a person's kill -9 of an executor just
// started is no reason to delay its replacement). A failure of the
// worker's own counts: a worker that fails every launch at once would
// otherwise be retried as fast as its placements commit.
func (b Backoff) AfterEnd(state wire.ExecutorState, cause wire.FailureCause, runningSince, now time.Time) (next Backoff, delay time.Duration) {
	if state != wire.ExecutorExited && state != wire.ExecutorFailed || cause == wire.CauseSignal {
		return b, 0
	}
	if Stable(runningSince, now) {
		return Backoff{}, 0
	}
	if now.Before(b.Until) {
		return b, 0 // this delay already counts the failure
	}
	delay = RelaunchBackoff(b.FastEnds + 1)
	return Backoff{FastEnds: b.FastEnds + 1, Until: now.Add(delay)}, delay
}

// AtTick is b at a tick of the master's, when stable says whether one of
// the app's executors runs stably: that clears it; a wait that is over is
// dropped (over: the app may get executors again), its fast ends kept so
// that the next fast end doubles the delay.
func (b Backoff) AtTick(stable bool, now time.Time) (next Backoff, over bool) {
	switch {
	case b.FastEnds > 0 && stable:
		return Backoff{}, false
	case !b.Until.IsZero() && !BackingOff(b.Until, now):
		return Backoff{FastEnds: b.FastEnds}, true
	}
	return b, false
}

// Restart policies. An app that sets one counts its executors' failures
// (FAILED: a non-zero exit, a memory kill, checks that failed their count)
// within the policy's interval: past its attempts, it ends FAILED (mode
// fail) or its new executors wait until the oldest of them leaves the
// interval (mode delay); every failure delays the next executor by at
// least the policy's delay (wire.RestartPolicy.Verdict, which the worker
// applies to the drivers it supervises too). An app without one keeps the
// master's rule: --max-executor-retries failures in a row with none
// running stably.

// RestartAttempts is the attempts p allows: its own, else the master's
// --max-executor-retries (maxRetries; a negative one, no limit for the
// master's rule, allows none).
func RestartAttempts(p wire.RestartPolicy, maxRetries int) int {
	return p.AttemptsOr(max(maxRetries, 0))
}

// ResolveRestart is p with the defaults filled in (nil: none), as a worker
// supervising a driver applies it.
func ResolveRestart(p *wire.RestartPolicy, maxRetries int) *wire.RestartPolicy {
	if p == nil {
		return nil
	}
	out := *p
	attempts := RestartAttempts(*p, maxRetries)
	interval, delay := wire.Duration(p.IntervalD()), wire.Duration(p.DelayD())
	out.Attempts, out.Interval, out.Delay, out.Mode = &attempts, &interval, &delay, p.ModeOr()
	return &out
}

// Restart is what an app's restart policy makes of one of its executors'
// failures.
type Restart struct {
	Failures []time.Time // within the interval, this one included: kept for the next
	Attempts int         // the attempts the policy allows
	Fail     bool        // past its attempts in mode fail: the app ends FAILED
	// WaitUntil is when the app's new executors may start, when later than
	// the backoff it had (zero: that stays).
	WaitUntil time.Time
}

// AfterFailure applies p to an executor's failure at now, given the
// failures before it (oldest first) and the app's backoff until then.
func AfterFailure(p wire.RestartPolicy, maxRetries int, failures []time.Time, backoffUntil, now time.Time) Restart {
	r := Restart{Attempts: RestartAttempts(p, maxRetries)}
	var until time.Time
	r.Failures, r.Fail, until = p.Verdict(r.Attempts, failures, now)
	if !r.Fail && until.After(backoffUntil) {
		r.WaitUntil = until
	}
	return r
}

// RetriesExhausted reports whether an app without a restart policy has
// failed for good: retries executors failed in a row, limit or more
// (--max-executor-retries; negative: no limit), and none of its executors
// runs stably (Spark standalone's rule: a working executor proves the app
// can run, so its other failures are the machines').
func RetriesExhausted(limit, retries int, stableRunning bool) bool {
	return limit >= 0 && retries >= limit && !stableRunning
}
