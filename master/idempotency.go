package master

import (
	"encoding/json"
	"net/http"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Idempotent submissions (wire.IdempotencyKeyHeader). The key is written
// with the app's or driver's record, so every leader knows it: the index is
// rebuilt from the state on election, grows as keyed submissions commit and
// shrinks as apps and drivers leave the completed lists. A repeat is thus
// recognised across failovers, which is what makes a 504 (outcome unknown)
// safe to retry.

type keyKind string

const (
	keyApp    keyKind = "app"
	keyDriver keyKind = "driver"
)

type submissionKey struct {
	kind keyKind
	key  string
}

// keyedWrite is a keyed submission being committed; repeats wait for it.
type keyedWrite struct {
	desc    any // its description, defaults applied
	waiters []func(any, error)
}

// submissionKeys maps the keys of the listed apps and drivers to their ids,
// and holds the keyed submissions in flight. Both are loop-owned.
type submissionKeys struct {
	ids      map[submissionKey]string
	inFlight map[submissionKey]*keyedWrite
}

// fingerprint identifies a submission's description (defaults applied), so
// that a key reused for something else is refused rather than answered
// with the id of an unrelated app.
func fingerprint(desc any) string {
	data, err := json.Marshal(desc)
	if err != nil {
		return "" // cannot happen for wire types
	}
	return string(data)
}

func errKeyReused(k submissionKey, id string) error {
	if id == "" {
		return httpx.Errorf(http.StatusUnprocessableEntity, "idempotency key %q is in use by another %s submission being committed, with a different description", k.key, k.kind)
	}
	return httpx.Errorf(http.StatusUnprocessableEntity, "idempotency key %q was used for %s %s, with a different description", k.key, k.kind, id)
}

// answerRepeat answers a keyed submission that repeats one in flight or one
// already listed, and reports whether it did. desc is the submission's
// description (defaults applied); listed returns the fingerprint recorded
// for an id, false when the master no longer lists it. Fingerprints are
// only computed for repeats: the loop is the master's bottleneck.
func (c *core) answerRepeat(k submissionKey, desc any, listed func(id string) (string, bool), reply func(any, error)) bool {
	if k.key == "" {
		return false
	}
	if w := c.keys.inFlight[k]; w != nil {
		if fingerprint(w.desc) != fingerprint(desc) {
			reply(nil, errKeyReused(k, ""))
		} else {
			w.waiters = append(w.waiters, reply)
		}
		return true
	}
	id, ok := c.keys.ids[k]
	if !ok {
		return false
	}
	stored, ok := listed(id)
	if !ok {
		delete(c.keys.ids, k) // gone from the lists: the key is free again
		return false
	}
	if stored != fingerprint(desc) {
		reply(nil, errKeyReused(k, id))
		return true
	}
	reply(wire.Submitted{ID: id, Existing: true}, nil)
	return true
}

// beginKeyed records a keyed submission as in flight.
func (c *core) beginKeyed(k submissionKey, desc any) {
	if k.key != "" {
		c.keys.inFlight[k] = &keyedWrite{desc: desc}
	}
}

// endKeyed answers the repeats that waited on a keyed submission with its
// outcome: the id, or the same error.
func (c *core) endKeyed(k submissionKey, id string, err error) {
	w := c.keys.inFlight[k]
	if w == nil {
		return
	}
	delete(c.keys.inFlight, k)
	for _, reply := range w.waiters {
		if err != nil {
			reply(nil, err)
		} else {
			reply(wire.Submitted{ID: id, Existing: true}, nil)
		}
	}
}

func (c *core) rememberKey(k submissionKey, id string) {
	if k.key != "" {
		c.keys.ids[k] = id
	}
}

func (c *core) forgetKey(k submissionKey) {
	if k.key != "" {
		delete(c.keys.ids, k)
	}
}

// indexKeys rebuilds the key index from the state a new leader starts from.
func (c *core) indexKeys(s *persistence.State) {
	for _, r := range s.Apps {
		c.rememberKey(submissionKey{keyApp, r.IdempotencyKey}, r.ID)
	}
	for _, r := range s.Drivers {
		c.rememberKey(submissionKey{keyDriver, r.IdempotencyKey}, r.ID)
	}
}

// listedApp and listedDriver return the fingerprint of a listed app's or
// driver's description.
func (c *core) listedApp(id string) (string, bool) {
	a := c.apps[id]
	if a == nil {
		a = c.completedApp(id)
	}
	if a == nil {
		return "", false
	}
	return fingerprint(a.rec.Desc), true
}

func (c *core) listedDriver(id string) (string, bool) {
	d := c.drivers[id]
	if d == nil {
		d = c.completedDriver(id)
	}
	if d == nil {
		return "", false
	}
	return fingerprint(d.rec.Desc), true
}
