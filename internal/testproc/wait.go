package testproc

import (
	"context"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// pollEvery is how often Eventually asks: often enough to add little to a
// test's time, seldom enough to leave the machine to the code under test.
const pollEvery = 10 * time.Millisecond

// Eventually polls cond until it holds; the test fails, naming what it
// waited for, if cond does not hold within the given time.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll.Within(context.Background(), within, pollEvery, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
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
