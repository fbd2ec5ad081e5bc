package poll

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep with a live context reported it ended")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep with an ended context reported it alive")
	}
	if time.Since(start) > time.Second {
		t.Error("Sleep waited past its context's end")
	}
}

func TestUntil(t *testing.T) {
	calls := 0
	if !Until(context.Background(), time.Millisecond, func() bool { calls++; return calls == 3 }) {
		t.Error("Until gave up on a condition that came to hold")
	}
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	if Until(ctx, time.Hour, func() bool { calls++; return false }) {
		t.Error("Until reported a condition that never held")
	}
	if calls != 2 {
		t.Errorf("cond called %d times after the context ended, want 2 (the first and the last)", calls)
	}
}

func TestWithin(t *testing.T) {
	start := time.Now()
	if Within(context.Background(), 20*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Error("Within reported a condition that never held")
	}
	if d := time.Since(start); d < 20*time.Millisecond || d > 5*time.Second {
		t.Errorf("Within gave up after %s, want about 20ms", d)
	}
	late := time.Now().Add(10 * time.Millisecond)
	if !Within(context.Background(), time.Minute, time.Millisecond, func() bool { return time.Now().After(late) }) {
		t.Error("Within gave up on a condition that came to hold")
	}
}

func TestUntilNil(t *testing.T) {
	calls := 0
	err := UntilNil(context.Background(), time.Millisecond, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("UntilNil: %v after %d calls, want nil after 3", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	err = UntilNil(ctx, time.Hour, func() error { calls++; return fmt.Errorf("no %d", calls) })
	if err == nil || err.Error() != "no 2" {
		t.Errorf("UntilNil with an ended context: %v, want the last call's error (no 2)", err)
	}
}

func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	Every(ctx, time.Millisecond, func() {
		if calls++; calls == 3 {
			cancel()
		}
	})
	if calls != 3 {
		t.Errorf("f called %d times, want 3 (the third ended the context)", calls)
	}
	calls = 0
	Every(ctx, time.Millisecond, func() { calls++ })
	if calls != 0 {
		t.Errorf("f called %d times with an ended context, want 0", calls)
	}
}
