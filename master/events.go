package master

import (
	"slices"

	"github.com/berth-cluster/berth/wire"
)

// subscriber is one open event stream of an app's client. The loop sends
// without ever blocking: a client too slow to keep up with subscriberBuffer
// events is cut off and, on reconnecting, starts again from a snapshot.
type subscriber struct {
	ch chan wire.AppEvent
}

const subscriberBuffer = 256

// subscribe opens an event stream for an app's client. It is the client's
// lease: while a stream is open the app is alive. The stream starts with a
// snapshot; after a failover, with masterChanged first, which is how a client
// answers the new leader.
func (c *core) subscribe(id string) (*subscriber, []wire.AppEvent, error) {
	if !c.leading() {
		return nil, nil, c.notLeader()
	}
	a := c.apps[id]
	if a == nil {
		if done := c.completedApp(id); done != nil {
			st, now := appStatus(done), c.now()
			return nil, []wire.AppEvent{{Type: wire.EventSnapshot, AppID: id, Time: now, App: st}, {Type: wire.EventAppRemoved, AppID: id, Time: now, App: st, Message: done.message}}, nil
		}
		return nil, nil, notFound("application", id)
	}
	if err := c.roomForStream(a); err != nil {
		return nil, nil, err
	}
	var first []wire.AppEvent
	now := c.now()
	if a.state == wire.AppUnknown {
		first = append(first, wire.AppEvent{Type: wire.EventMasterChanged, AppID: id, Time: now, Epoch: c.epoch, Leader: c.cfg.Advertise})
		c.acknowledge(a)
	}
	first = append(first, wire.AppEvent{Type: wire.EventSnapshot, AppID: id, Time: now, App: appStatus(a)})
	s := &subscriber{ch: make(chan wire.AppEvent, subscriberBuffer)}
	a.subs[s] = struct{}{}
	a.lastSeen = c.now()
	return s, first, nil
}

// unsubscribe closes a stream that its client left.
func (c *core) unsubscribe(id string, s *subscriber) {
	a := c.apps[id]
	if a == nil {
		return
	}
	if _, ok := a.subs[s]; ok {
		c.cut(a, s)
	}
	a.lastSeen = c.now() // the app timeout counts from here
}

// publish sends an event to every open stream of the app.
func (c *core) publish(a *appInfo, ev wire.AppEvent) {
	ev.AppID, ev.Time = a.rec.ID, c.now()
	if n := len(a.recent); n > 0 && ev.Type == wire.EventExecutorLimitChanged && a.recent[n-1].Type == ev.Type {
		// A run of limit changes (dynamic allocation) is one entry of the
		// recent events, the latest: it must not push a LOST off the page.
		a.recent = a.recent[:n-1]
	}
	a.recent = append(a.recent, ev)
	if len(a.recent) > recentEventsKept {
		a.recent = slices.Delete(a.recent, 0, len(a.recent)-recentEventsKept)
	}
	for s := range a.subs {
		select {
		case s.ch <- ev:
		default:
			c.log.Warn("app client too slow; closing its event stream", "app", a.rec.ID)
			c.cut(a, s)
		}
	}
}

// closeSubscribers ends every stream of the app.
func (c *core) closeSubscribers(a *appInfo) {
	for s := range a.subs {
		c.cut(a, s)
	}
}

// cut ends one stream. The client was there until now, so its lease runs
// from now: it has the app timeout to reconnect.
func (c *core) cut(a *appInfo, s *subscriber) {
	delete(a.subs, s)
	close(s.ch)
	a.lastSeen = c.now()
}
