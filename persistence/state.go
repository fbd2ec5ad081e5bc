package persistence

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// State is everything the master keeps durably.
type State struct {
	Epoch   uint64                   `json:"epoch"`
	Apps    map[string]*AppRecord    `json:"apps"`
	Drivers map[string]*DriverRecord `json:"drivers"`
	Workers map[string]*WorkerRecord `json:"workers"`
	Masters map[string]*MasterRecord `json:"masters"`
	// Executors holds the live executors, by appId/executorId.
	Executors map[string]*ExecutorRecord `json:"executors"`
	// Next sequence numbers for ids, one past the highest ever recorded, so a
	// new leader never hands out an id twice.
	NextAppNumber    int `json:"nextAppNumber"`
	NextDriverNumber int `json:"nextDriverNumber"`
	// EndedSessions are the web UI's sessions signed out before they
	// expired, by EndedKey → expiry (Unix seconds): the masters refuse
	// them until then (httpx.UISessions, sessions_ended.go).
	EndedSessions map[string]int64 `json:"endedSessions,omitempty"`
	// Queues are the queues an operator set (the default queue only if
	// set); Tenants the tenants; Audit the audit log, oldest first.
	Queues  map[string]*QueueRecord  `json:"queues,omitempty"`
	Tenants map[string]*TenantRecord `json:"tenants,omitempty"`
	// EndedExecutors: the last executors of each active app that ended,
	// by app id (an ended app's final record lists them instead).
	EndedExecutors map[string]*EndedExecutorsRecord `json:"endedExecutors,omitempty"`
	Audit          []wire.AuditEntry                `json:"audit,omitempty"`
	// AuditCount counts the audit entries ever written: Audit[i] is entry
	// number AuditCount-len(Audit)+i.
	AuditCount uint64 `json:"auditCount,omitempty"`

	// The ended apps and drivers, oldest first, indexed once and then kept
	// by Apply, so that trimming the oldest costs a lookup, not a scan of
	// every record at every end (a Raft log replayed at start applies
	// thousands of ends in a row).
	endedApps, endedDrivers endedIndex
	// auditBytes is what Audit counts toward MaxAuditBytes, once
	// auditCounted (auditSize).
	auditBytes   int
	auditCounted bool
}

// endedIndex orders finished records by end time, then id: the order in
// which trim drops them, the same on every master.
type endedIndex struct {
	known bool
	order []aged
}

type aged struct {
	at int64 // end time, Unix nanoseconds
	id string
}

func (a aged) cmp(b aged) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// build indexes m's finished records, the first time it is needed.
func build[R any, P endingRecord[R]](x *endedIndex, m map[string]*R) {
	if x.known {
		return
	}
	x.known, x.order = true, x.order[:0]
	for id, r := range m {
		if P(r).Finished() {
			x.order = append(x.order, agedOf(id, P(r)))
		}
	}
	slices.SortFunc(x.order, aged.cmp)
}

// agedOf is the index entry of the ended record r, kept under id.
func agedOf(id string, r ending) aged { return aged{endedAt(r.endTime()).UnixNano(), id} }

// add indexes a record that ended (usually the newest: an append).
func (x *endedIndex) add(a aged) {
	if !x.known {
		return // indexed whole when first needed
	}
	i, _ := slices.BinarySearchFunc(x.order, a, aged.cmp)
	x.order = slices.Insert(x.order, i, a)
}

// remove forgets a finished record that was deleted.
func (x *endedIndex) remove(a aged) {
	if !x.known {
		return
	}
	if i, ok := slices.BinarySearchFunc(x.order, a, aged.cmp); ok {
		x.order = slices.Delete(x.order, i, i+1)
	}
}

// NewState returns an empty state: an empty map of every kind.
func NewState() *State {
	s := &State{}
	s.makeMaps()
	return s
}

// Clone copies the state. Records are shared: they are never modified in
// place.
func (s *State) Clone() *State {
	c := *s
	for _, k := range recordKinds {
		k.copyMap(&c) // a missing map stays missing
	}
	c.EndedSessions = maps.Clone(s.EndedSessions)
	c.Audit = slices.Clip(s.Audit)                           // appended to only: a copy's append reallocates
	c.endedApps, c.endedDrivers = endedIndex{}, endedIndex{} // rebuilt if the copy is ever trimmed
	return &c
}

// Equal reports whether s and o hold the same durable state: what a
// snapshot of each would hold. It compares their encodings because a
// snapshot keeps only that: a time read back has lost its monotonic
// reading, and may carry another *time.Location for the same offset, which
// reflect.DeepEqual would tell apart from the time written.
func (s *State) Equal(o *State) bool {
	a, errS := json.Marshal(s)
	b, errO := json.Marshal(o)
	if errS != nil || errO != nil {
		// No snapshot can hold such a state (a time beyond year 9999):
		// compare the values themselves.
		return reflect.DeepEqual(durable(s), durable(o))
	}
	return bytes.Equal(a, b)
}

// durable is s without what Apply derives from it (the ended indexes).
func durable(s *State) *State {
	c := *s
	c.endedApps, c.endedDrivers = endedIndex{}, endedIndex{}
	c.auditBytes, c.auditCounted = 0, false
	return &c
}

// Empty reports whether there is nothing to recover: no active app or
// driver and no worker (finished records and masters do not count).
func (s *State) Empty() bool {
	for _, a := range s.Apps {
		if !a.Finished() {
			return false
		}
	}
	for _, d := range s.Drivers {
		if !d.Finished() {
			return false
		}
	}
	return len(s.Workers) == 0
}

// Bucket names a kind of record; Key is one record.
type Bucket string

const (
	BucketApps      Bucket = "apps"
	BucketDrivers   Bucket = "drivers"
	BucketWorkers   Bucket = "workers"
	BucketMasters   Bucket = "masters"
	BucketExecutors Bucket = "executors"
	BucketQueues    Bucket = "queues"
	BucketTenants   Bucket = "tenants"
	// BucketEndedExecutors: the executors of active apps that ended.
	BucketEndedExecutors Bucket = "endedExecutors"
)

// Key identifies one record touched by Apply.
type Key struct {
	Bucket Bucket
	ID     string
}

// Apply applies one command. It is deterministic (the same commands in the
// same order give the same state on every master), never panics on a
// malformed command, and leaves the state unchanged when it returns an
// error. touched, if not nil, is told every record put or deleted (the
// epoch and counters are not records).
func (s *State) Apply(c Command, touched func(Key)) error {
	k, err := c.kind()
	if err != nil {
		return err
	}
	if k == nil {
		return nil // an ignorable unknown type: nothing to do
	}
	if touched == nil {
		touched = func(Key) {}
	}
	k.apply(s, c, touched)
	return nil
}

// dropExecutors deletes the executor records that match.
func (s *State) dropExecutors(match func(*ExecutorRecord) bool, touched func(Key)) {
	for k, e := range s.Executors {
		if match(e) {
			delete(s.Executors, k)
			touched(Key{BucketExecutors, k})
		}
	}
}

// putEnding puts r, an app or a driver, as its kind k, and keeps what the
// State derives from it: the next id number past r's, and the index x of
// ended records, trimmed to retain once r ended. It puts nothing and
// reports false when the record held already ended: a record ends once,
// and a later write of it (a change decided before its end committed, or a
// second end) changes nothing, so no order of writes can bring it back.
func putEnding[R any, P endingRecord[R]](s *State, k *kind[R], x *endedIndex, next *int, r P, retain int, touched func(Key)) bool {
	id := r.key()
	if old := P((*k.field(s))[id]); old != nil && old.Finished() {
		return false
	}
	k.put(s, r, touched)
	*next = max(*next, idNumber(id)+1)
	if r.Finished() {
		x.add(agedOf(id, r))
		trim[R, P](s, k, x, retain, touched)
	}
	return true
}

// deleteEnding deletes the app or driver id, as its kind k, and from the
// index x.
func deleteEnding[R any, P endingRecord[R]](s *State, k *kind[R], x *endedIndex, id string, touched func(Key)) {
	if old := P((*k.field(s))[id]); old != nil && old.Finished() {
		x.remove(agedOf(old.key(), old))
	}
	k.delete(s, id, touched)
}

// trim drops the oldest finished records of kind k beyond retain (retain <
// 1 keeps them all). Age is by end time then id, so every master drops the
// same.
func trim[R any, P endingRecord[R]](s *State, k *kind[R], x *endedIndex, retain int, touched func(Key)) {
	if retain < 1 {
		return
	}
	m := *k.field(s)
	build[R, P](x, m)
	excess := len(x.order) - retain
	if excess <= 0 {
		return
	}
	for _, a := range x.order[:excess] {
		delete(m, a.id) // the index lists only records m holds
		touched(Key{k.bucket, a.id})
	}
	clear(x.order[:excess])    // let the dropped ids go
	x.order = x.order[excess:] // no copy: appends reallocate the live part only
}

// idNumber is the sequence number at the end of an id like
// app-20261122101500-0007, or -1.
func idNumber(id string) int {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 0 || n > 1<<40 {
		return -1
	}
	return n
}
