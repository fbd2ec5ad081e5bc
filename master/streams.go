package master

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// An idle stream carries a heartbeat line every appEventsKeepAlive, while
// this master's leadership is confirmed (leaderLease). Every line promises
// the next within appEventsDeadline, so a client whose master froze, was cut
// off or was deposed notices within about a second and moves on.
const (
	appEventsKeepAlive = 250 * time.Millisecond
	appEventsDeadline  = time.Second
	// appEventsWriteTimeout bounds one line's write.
	appEventsWriteTimeout = 10 * time.Second
)

// appEvents streams an app's events as one JSON object per line. The open
// stream is the client's lease on the app.
func (m *Master) appEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := checkID("app id", id); err != nil {
		httpx.WriteErr(w, r, err)
		return
	}
	type opened struct {
		sub   *subscriber
		first []wire.AppEvent
	}
	// A stream nobody reads must not hold the app's lease: if the client
	// gave up before the loop got to it, do not subscribe; if it gave up
	// after, unsubscribe what was created (both closures run in the loop,
	// so created needs no lock).
	var created *subscriber
	ctx := r.Context()
	o, err := query(ctx, m, func(c *core) (opened, error) {
		if err := ctx.Err(); err != nil {
			return opened{}, err
		}
		sub, first, err := c.subscribe(id)
		created = sub
		return opened{sub, first}, err
	})
	if err != nil {
		m.post(func(c *core) {
			if created != nil {
				c.unsubscribe(id, created)
			}
		})
		respond(w, r, nil, err)
		return
	}
	if o.sub != nil {
		defer m.post(func(c *core) { c.unsubscribe(id, o.sub) })
	}
	if err := httpx.LongLived(w); err != nil {
		m.log.Warn("event stream: lifting the server's timeouts", "app", id, "err", err)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	write := func(ev wire.AppEvent) bool {
		if ev.AppID == "" {
			ev.AppID = id
		}
		ev.NextWithinMs = appEventsDeadline.Milliseconds()
		// A client that stops reading is gone: its lease must not live on
		// in a write blocked on a full socket.
		_ = httpx.WriteWithin(w, appEventsWriteTimeout)
		if enc.Encode(ev) != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	for _, ev := range o.first {
		if !write(ev) {
			return
		}
	}
	if o.sub == nil {
		return // the app had already ended
	}
	keepAlive := time.NewTicker(appEventsKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, open := <-o.sub.ch:
			if !open || !write(ev) || ev.Type == wire.EventAppRemoved {
				return
			}
		case <-keepAlive.C:
			if !m.lease.fresh() {
				continue // silence: the client moves on if this lasts
			}
			if !write(wire.AppEvent{Type: wire.EventHeartbeat, Time: time.Now()}) {
				return
			}
		}
	}
}
