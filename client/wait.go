package client

import (
	"context"
	"fmt"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// WaitApp polls the app every pollEvery until it has ended (FINISHED,
// FAILED or KILLED) and returns its final status.
func (c *Client) WaitApp(ctx context.Context, id string, pollEvery time.Duration) (wire.AppStatus, error) {
	if pollEvery <= 0 {
		pollEvery = time.Second
	}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	var last wire.AppStatus
	for {
		st, err := c.App(ctx, id)
		if err != nil && ctx.Err() != nil && last.State != "" {
			// The wait's own end, during a read.
			return last, fmt.Errorf("wait for app %s (last state %s): %w", id, last.State, ctx.Err())
		}
		if err != nil {
			return st, fmt.Errorf("wait for app: %w", err)
		}
		last = st
		if st.State.Finished() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("wait for app %s (last state %s): %w", id, st.State, ctx.Err())
		case <-t.C:
		}
	}
}
