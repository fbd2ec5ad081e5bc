package client

import (
	"context"
	"fmt"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// SubmitDriver submits a driver to run in the cluster and returns its id.
// Like RegisterApp, it is sent under an idempotency key and retried through
// failovers without risk of starting the driver twice.
func (c *Client) SubmitDriver(ctx context.Context, desc wire.DriverDescription, opts ...SubmitOption) (string, error) {
	return submit(ctx, c, wire.MasterAPI.SubmitDriver, desc, opts, "submit driver")
}

// Driver returns a driver's status.
func (c *Client) Driver(ctx context.Context, id string) (wire.DriverStatus, error) {
	return onEntity(ctx, c, wire.MasterAPI.Driver, "driver", id)
}

// KillDriver kills a driver and returns its status once the kill is
// durable: KILLED for one that was waiting, else still running with
// KillRequested set (its worker reports KILLED once the process is gone);
// a driver that already ended returns its final status.
func (c *Client) KillDriver(ctx context.Context, id string) (wire.DriverStatus, error) {
	return onEntity(ctx, c, wire.MasterAPI.KillDriver, "kill driver", id)
}

// WaitDriver polls the driver every pollEvery until it is in a final state
// and returns that status. A supervised driver whose worker was lost ends
// RELAUNCHING and lives on under a new id (RelaunchedAs): WaitDriver follows
// it, so the status returned may be of a later driver than id.
func (c *Client) WaitDriver(ctx context.Context, id string, pollEvery time.Duration) (wire.DriverStatus, error) {
	if pollEvery <= 0 {
		pollEvery = time.Second
	}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		st, err := c.Driver(ctx, id)
		if err != nil {
			return st, fmt.Errorf("wait for driver: %w", err)
		}
		switch {
		case st.State == wire.DriverRelaunching && st.RelaunchedAs != "":
			c.log.Info("driver relaunched", "driver", id, "as", st.RelaunchedAs)
			id = st.RelaunchedAs
			continue
		case st.State == wire.DriverRelaunching:
			// The new id is not recorded yet: look again.
		case st.State.Finished():
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("wait for driver %s (last state %s): %w", id, st.State, ctx.Err())
		case <-t.C:
		}
	}
}
