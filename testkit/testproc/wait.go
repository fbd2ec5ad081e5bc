package testproc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// pollEvery is how often Eventually asks: often enough to add little to a
// test's time, seldom enough to leave the machine to the code under test.
const pollEvery = 10 * time.Millisecond

// TestingT is what Eventually and Stable need of a test: a testing.TB, or
// a stand-in that sees them fail.
type TestingT interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Condition is what Eventually polls: one that holds or not, or one that
// says why it does not hold yet (its last error is in the failure).
type Condition interface {
	func() bool | func() error
}

var errNotYet = errors.New("not yet")

// Eventually polls cond until it holds; the test fails, naming what it
// waited for (and cond's last error), if cond does not hold within the
// given time. cond runs in the test's goroutine: it may fail the test
// itself.
func Eventually[C Condition](t TestingT, within time.Duration, what string, cond C) {
	t.Helper()
	check, _ := any(cond).(func() error)
	if holds, ok := any(cond).(func() bool); ok {
		check = func() error {
			if holds() {
				return nil
			}
			return errNotYet
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := poll.UntilNil(ctx, pollEvery, check); err != nil {
		t.Fatalf("timed out after %v waiting for %s: %v", within, what, err)
	}
}

// Stable checks every 50 ms for d that cond keeps holding, and fails the
// test at the first error: a negative observation, something that must
// not happen during the window.
func Stable(t TestingT, d time.Duration, what string, cond func() error) {
	t.Helper()
	var err error
	if poll.Within(context.Background(), d, 50*time.Millisecond, func() bool {
		err = cond()
		return err != nil
	}) {
		t.Fatalf("%s: %v", what, err)
	}
}

// Receive returns the next value from ch; the test fails, naming what it
// waited for, if none comes within the given time.
func Receive[T any](t testing.TB, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", within, what)
		var zero T
		return zero // not reached: Fatalf ends the test's goroutine
	}
}
