package testcluster

import (
	"context"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// TestingT is what Eventually and Stable need of a *testing.T: the
// package is built into berthbench too, which has no use for testing.
type TestingT interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually polls cond every 20 ms until it returns nil; if it has not
// within timeout, the test fails with what it waited for and cond's last
// error. cond runs in the test's goroutine: it may fail the test itself.
func Eventually(t TestingT, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := poll.UntilNil(ctx, 20*time.Millisecond, cond); err != nil {
		t.Fatalf("%s: not true within %s: %v", what, timeout, err)
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
