package testcluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeT fails as a *testing.T does, without going on: its Fatalf panics
// with the message, which run recovers.
type fakeT struct{}

type failure string

func (fakeT) Helper()                           {}
func (fakeT) Fatalf(format string, args ...any) { panic(failure(fmt.Sprintf(format, args...))) }

// run calls f as a test would and returns its failure ("" if it passed).
func run(f func(t TestingT)) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = string(r.(failure))
		}
	}()
	f(fakeT{})
	return ""
}

func TestEventually(t *testing.T) {
	calls := 0
	if msg := run(func(ft TestingT) {
		Eventually(ft, time.Minute, "the third call", func() error {
			if calls++; calls < 3 {
				return errors.New("not yet")
			}
			return nil
		})
	}); msg != "" || calls != 3 {
		t.Errorf("Eventually failed with %q after %d calls, want a pass after 3", msg, calls)
	}
	msg := run(func(ft TestingT) {
		Eventually(ft, 30*time.Millisecond, "never", func() error { return errors.New("still no") })
	})
	if !strings.Contains(msg, "never: not true within 30ms: still no") {
		t.Errorf("Eventually of a condition that never holds failed with %q, want what, timeout and the last error", msg)
	}
}

func TestStable(t *testing.T) {
	calls := 0
	if msg := run(func(ft TestingT) {
		Stable(ft, 120*time.Millisecond, "holds", func() error { calls++; return nil })
	}); msg != "" || calls < 2 {
		t.Errorf("Stable of a condition that holds failed with %q after %d calls", msg, calls)
	}
	msg := run(func(ft TestingT) {
		Stable(ft, time.Minute, "breaks", func() error { return errors.New("broke") })
	})
	if msg != "breaks: broke" {
		t.Errorf("Stable of a condition that breaks failed with %q, want %q", msg, "breaks: broke")
	}
}
