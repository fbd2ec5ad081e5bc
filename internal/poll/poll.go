// Package poll waits for time to pass or for a condition to hold, and stops
// waiting when a context ends.
package poll

import (
	"context"
	"time"
)

// Sleep waits d, or less if ctx ends first. It reports whether ctx is still
// alive, so that a loop can stop at once when it is not.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Until calls cond every interval until it holds or ctx ends. It reports
// whether cond held; when ctx ends, cond gets one last call, so that what
// happened during the last pause is not missed.
func Until(ctx context.Context, every time.Duration, cond func() bool) bool {
	for !cond() {
		if !Sleep(ctx, every) {
			return cond()
		}
	}
	return true
}

// Within is Until bounded by d as well as by ctx.
func Within(ctx context.Context, d, every time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return Until(ctx, every, cond)
}

// UntilNil is Until for a condition that says why it does not hold yet: it
// calls cond every interval until cond returns nil or ctx ends, and returns
// nil, or cond's last error, for the caller to report.
func UntilNil(ctx context.Context, every time.Duration, cond func() error) error {
	var err error
	Until(ctx, every, func() bool {
		err = cond()
		return err == nil
	})
	return err
}

// Every calls f at once and then at every tick of a ticker of the given
// interval, until ctx ends: a slow call does not push back the calls after
// it, as a sleep between them would.
func Every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for ctx.Err() == nil {
		f()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}
