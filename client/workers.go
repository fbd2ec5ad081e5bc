package client

import (
	"context"
	"fmt"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// DrainWorker drains a worker: nothing new is placed on it, and what runs
// there has deadline to end before it is killed and replaced elsewhere
// (0: the master's default, 10 minutes). It returns the worker's status
// once the drain is durable; draining a worker again re-times its drain.
func (c *Client) DrainWorker(ctx context.Context, id string, deadline time.Duration) (wire.WorkerStatus, error) {
	var out wire.WorkerStatus
	body := wire.DrainRequest{DeadlineSeconds: int(deadline.Round(time.Second) / time.Second)}
	if err := c.call(ctx, on(wire.MasterAPI.Drain.Endpoint, body, id), &out); err != nil {
		return out, fmt.Errorf("drain worker %s: %w", id, err)
	}
	return out, nil
}

// UndrainWorker ends a worker's drain before its deadline: it is ALIVE
// again.
func (c *Client) UndrainWorker(ctx context.Context, id string) (wire.WorkerStatus, error) {
	return onEntity(ctx, c, wire.MasterAPI.Undrain, "undrain worker", id)
}

// ClearWorker forgets the processes that failed on a worker: it is no
// longer unhealthy, and no app's executors are kept off it any more
// (docs/HEALTH.md). Clearing twice does what clearing once does.
func (c *Client) ClearWorker(ctx context.Context, id string) (wire.WorkerStatus, error) {
	return onEntity(ctx, c, wire.MasterAPI.ClearWorker, "clear worker", id)
}
