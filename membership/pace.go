package membership

import (
	"context"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// Pace waits d, or until ctx ends, and then returns ctx's error.
type Pace func(ctx context.Context, d time.Duration) error

// The pause between attempts doubles from firstPause up to maxPause: a
// cluster that is electing a leader answers within a few seconds, a dead
// one is not worth asking more often.
const (
	firstPause = 200 * time.Millisecond
	maxPause   = 5 * time.Second
)

// RealPace waits d on a timer, or until ctx ends.
func RealPace(ctx context.Context, d time.Duration) error {
	if !poll.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}
