package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Events follows the app's event stream (GET /v1/apps/{id}/events on the
// leader) and calls handle for each event, heartbeats excepted.
//
// Holding the stream open is the app's lease with the master: a client that
// follows Events needs no HeartbeatApp. When the stream breaks without an
// appRemoved event (the master died, leadership moved), Events reconnects to
// whichever master leads, with backoff, for up to the stream retry budget per
// outage. The first event of every connection is a snapshot (after a
// failover, with a masterChanged), so the handler can drop executors the new
// leader no longer knows; both are passed through.
//
// Events returns nil after the appRemoved event (passed to handle first),
// ctx.Err() when ctx is done, handle's error as is if it returns one, and
// an error if no master serves the stream within the budget or a master
// refuses it (an unknown app: 404).
func (c *Client) Events(ctx context.Context, appID string, handle func(wire.AppEvent) error) error {
	req := request{
		method: wire.MasterAPI.AppEvents.Method, path: wire.MasterAPI.AppEvents.Path(appID),
		leaderOnly: true, budget: c.streamRetryBudget,
	}
	pause := time.Duration(0)
	for {
		connCtx, cancel := context.WithCancel(ctx)
		resp, err := c.open(connCtx, req)
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("events of app %s: %w", appID, err)
		}
		final, silent, got, err := c.readEvents(connCtx, cancel, resp, handle)
		cancel()
		if final {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if silent {
			// The master broke its promise of a line: it froze, was cut
			// off or was deposed. Look elsewhere first.
			c.failed(baseOf(resp), true)
		}
		// A master that accepts the stream and drops it before a word must
		// not make us spin; a stream that delivered events was real, and
		// reconnects at once (failovers may come close together).
		if got > 0 {
			pause = 0
		} else {
			pause = min(max(2*pause, c.minBackoff), c.maxBackoff)
		}
		c.log.Info("event stream broken, reconnecting", "app", appID, "err", err, "pause", pause)
		if pause > 0 {
			if err := sleep(ctx, jitter(pause), time.Now().Add(pause)); err != nil {
				return err
			}
		}
	}
}

// readEvents reads one connection's events. final reports that Events is
// over: the app was removed (err nil) or handle failed (err is its error).
// Otherwise err says why the stream broke. A stream silent for longer than
// its master promised (an event's NextWithinMs; else the idle timeout) is
// cut through cancel, which ends the pending read: the master froze, was
// cut off or was deposed, and another one may lead by now.
// got counts the events read.
func (c *Client) readEvents(ctx context.Context, cancel context.CancelFunc, resp *http.Response, handle func(wire.AppEvent) error) (final, silent bool, got int, err error) {
	defer resp.Body.Close()
	silence := c.streamIdleTimeout
	idle := time.AfterFunc(silence, cancel)
	defer idle.Stop()
	// A clean EOF without appRemoved is a broken stream like any other.
	dec := json.NewDecoder(resp.Body)
	for {
		var ev wire.AppEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil && !idle.Stop() {
				return false, true, got, fmt.Errorf("no event for %s: %w", silence, err)
			}
			return false, false, got, err
		}
		got++
		if ev.NextWithinMs > 0 {
			silence = time.Duration(ev.NextWithinMs) * time.Millisecond
		}
		idle.Reset(silence)
		if ev.Type == wire.EventHeartbeat {
			continue
		}
		if err := handle(ev); err != nil {
			return true, false, got, err
		}
		if ev.Type == wire.EventAppRemoved {
			return true, false, got, nil
		}
	}
}

// baseOf is the master base URL a response came from.
func baseOf(resp *http.Response) string {
	u := resp.Request.URL
	return u.Scheme + "://" + u.Host
}
