package master

import (
	"crypto/sha256"
	"encoding/hex"
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

// keyed is what a submission says of its idempotency: its key ("" for
// none) and the hash of its description as the client sent it. The hash is
// taken before the master fills in defaults, some of which are its
// configuration (--default-cores): a retry that reaches a master configured
// otherwise is still the same request.
type keyed struct {
	key, hash string
	owner     string // the driver submitting, "" for an operator
	tenant    string // the tenant it acts for, "" for an operator
}

// keyedRequest returns the idempotency of a submission of desc under key.
// The HTTP handler calls it, off the loop.
func keyedRequest(key string, desc any) keyed {
	if key == "" {
		return keyed{}
	}
	data, _ := json.Marshal(desc) // wire types always marshal
	sum := sha256.Sum256(data)
	return keyed{key: key, hash: hex.EncodeToString(sum[:])}
}

// keyedWrite is a keyed submission being committed; repeats wait for it.
type keyedWrite struct {
	hash    string
	waiters []reply[wire.Submitted]
}

// submissionKeys maps the keys of the listed apps and drivers to their ids,
// and holds the keyed submissions in flight. Both are loop-owned.
type submissionKeys struct {
	ids      map[submissionKey]string
	inFlight map[submissionKey]*keyedWrite
}

func errKeyReused(k submissionKey, id string) error {
	if id == "" {
		return httpx.Coded(http.StatusUnprocessableEntity, wire.CodeKeyReused, "idempotency key %q is in use by another %s submission being committed, with a different description", k.key, k.kind)
	}
	return httpx.Coded(http.StatusUnprocessableEntity, wire.CodeKeyReused, "idempotency key %q was used for %s %s, with a different description", k.key, k.kind, id)
}

// answerRepeat answers a keyed submission that repeats one in flight or one
// already listed, and reports whether it did.
func (c *core) answerRepeat(k submissionKey, hash string, reply reply[wire.Submitted]) bool {
	if k.key == "" {
		return false
	}
	if w := c.keys.inFlight[k]; w != nil {
		if w.hash != hash {
			reply.fail(errKeyReused(k, ""))
		} else {
			w.waiters = append(w.waiters, reply)
		}
		return true
	}
	id, ok := c.keys.ids[k]
	if !ok {
		return false
	}
	stored, ok := c.listed(k.kind, id)
	if !ok {
		delete(c.keys.ids, k) // gone from the lists: the key is free again
		return false
	}
	if stored != hash {
		reply.fail(errKeyReused(k, id))
		return true
	}
	reply(wire.Submitted{ID: id, Existing: true}, nil)
	return true
}

// admitKeyed decides whether a submission may be written: only a leader
// takes one, a repeat is answered instead (answerRepeat), and its kind's
// cap may refuse it (roomFor). Admitted, it is in flight under its key
// (beginKeyed); refused, reply has been called.
func (c *core) admitKeyed(k submissionKey, hash string, reply reply[wire.Submitted]) bool {
	if !c.leading() {
		reply.fail(c.notLeader())
		return false
	}
	if c.answerRepeat(k, hash, reply) {
		return false
	}
	if err := c.roomFor(k.kind); err != nil {
		reply.fail(err)
		return false
	}
	c.beginKeyed(k, hash)
	return true
}

// beginKeyed records a keyed submission as in flight.
func (c *core) beginKeyed(k submissionKey, hash string) {
	if k.key != "" {
		c.keys.inFlight[k] = &keyedWrite{hash: hash}
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
		answerSubmitted(reply, id, true, err)
	}
}

// commitKeyed writes an admitted submission's record. Once it is durable,
// apply runs (if this leadership goes on) and the client gets its id even
// if leadership moved meanwhile (the new leader recovers the record); a
// failed write gets the error. Either way the repeats that waited on its
// key get the same answer. It counts against its kind's cap while it is
// written (c.registering).
func (c *core) commitKeyed(k submissionKey, id string, cmd persistence.Command, apply func(), reply reply[wire.Submitted]) {
	pending := &c.registering.apps
	if k.kind == keyDriver {
		pending = &c.registering.drivers
	}
	*pending++
	c.commit([]persistence.Command{cmd}, apply, func(err error) {
		*pending--
		answerSubmitted(reply, id, false, err)
		c.endKeyed(k, id, err)
	})
}

// answerSubmitted answers a submission with its id, or with err.
func answerSubmitted(reply reply[wire.Submitted], id string, existing bool, err error) {
	if err != nil {
		reply.fail(err)
		return
	}
	reply(wire.Submitted{ID: id, Existing: existing}, nil)
}

func (c *core) rememberKey(k submissionKey, id string) {
	if k.key != "" {
		c.keys.ids[k] = id
	}
}

// forgetKey forgets k if it still names id: the key of a relaunched driver
// names the newest of the chain, which outlives the others in the lists.
func (c *core) forgetKey(k submissionKey, id string) {
	if k.key != "" && c.keys.ids[k] == id {
		delete(c.keys.ids, k)
	}
}

// indexKeys rebuilds the key index from the state a new leader starts from,
// oldest first, so that a key shared by a relaunch chain names its newest.
func (c *core) indexKeys(s *persistence.State) {
	for _, r := range sortedRecords(s.Apps, func(r *persistence.AppRecord) string { return sortTime(r.SubmittedAt) + r.ID }) {
		c.rememberKey(submissionKey{keyApp, r.IdempotencyKey}, r.ID)
	}
	for _, r := range sortedRecords(s.Drivers, func(r *persistence.DriverRecord) string { return sortTime(r.SubmittedAt) + r.ID }) {
		c.rememberKey(submissionKey{keyDriver, r.IdempotencyKey}, r.ID)
	}
}

// listed returns the hash recorded for an app's or a driver's id, false
// when the master no longer lists it.
func (c *core) listed(kind keyKind, id string) (string, bool) {
	if kind == keyDriver {
		return c.listedDriver(id)
	}
	return c.listedApp(id)
}

// listedApp and listedDriver return the description hash of a listed app
// or driver.
func (c *core) listedApp(id string) (string, bool) {
	if a := c.findApp(id); a != nil {
		return a.rec.IdempotencyHash, true
	}
	return "", false
}

func (c *core) listedDriver(id string) (string, bool) {
	if d := c.findDriver(id); d != nil {
		return d.rec.IdempotencyHash, true
	}
	return "", false
}
