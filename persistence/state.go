package persistence

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
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

	// The ended apps and drivers, oldest first, indexed once and then kept
	// by Apply, so that trimming the oldest costs a lookup, not a scan of
	// every record at every end (a Raft log replayed at start applies
	// thousands of ends in a row).
	endedApps, endedDrivers endedIndex
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
	if c := cmpInt(a.at, b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// build indexes m's finished records, the first time it is needed.
func build[V any](x *endedIndex, m map[string]V, finished func(V) bool, ended func(V) *time.Time) {
	if x.known {
		return
	}
	x.known, x.order = true, x.order[:0]
	for id, r := range m {
		if finished(r) {
			x.order = append(x.order, aged{endedAt(ended(r)).UnixNano(), id})
		}
	}
	slices.SortFunc(x.order, aged.cmp)
}

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

// NewState returns an empty state.
func NewState() *State {
	return &State{
		Apps:      map[string]*AppRecord{},
		Drivers:   map[string]*DriverRecord{},
		Workers:   map[string]*WorkerRecord{},
		Masters:   map[string]*MasterRecord{},
		Executors: map[string]*ExecutorRecord{},
	}
}

// Clone copies the state. Records are shared: they are never modified in
// place.
func (s *State) Clone() *State {
	c := *s
	c.Apps = maps.Clone(s.Apps)
	c.Drivers = maps.Clone(s.Drivers)
	c.Workers = maps.Clone(s.Workers)
	c.Masters = maps.Clone(s.Masters)
	c.Executors = maps.Clone(s.Executors)
	c.endedApps, c.endedDrivers = endedIndex{}, endedIndex{} // rebuilt if the copy is ever trimmed
	return &c
}

// Equal reports whether s and o hold the same durable state: what a
// snapshot of each would hold.
func (s *State) Equal(o *State) bool {
	a, b := *s, *o
	a.endedApps, a.endedDrivers = endedIndex{}, endedIndex{}
	b.endedApps, b.endedDrivers = endedIndex{}, endedIndex{}
	return reflect.DeepEqual(&a, &b)
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
)

// Key identifies one record touched by Apply.
type Key struct {
	Bucket Bucket
	ID     string
}

var errMissingPayload = errors.New("command without its record")

// Check reports whether Apply would accept c, without a state: its type is
// known (or marked ignorable) and it carries the record its type needs. The
// master's writer checks every command before batching it with others.
func (c Command) Check() error {
	missing := false
	switch c.Type {
	case TypeBumpEpoch, TypeDeleteApp, TypeDeleteDriver, TypeDeleteWorker, TypeDeleteMaster, TypeDeleteExecutor:
	case TypePutApp:
		missing = c.App == nil || c.App.ID == ""
	case TypePutDriver:
		missing = c.Driver == nil || c.Driver.ID == ""
	case TypePutWorker:
		missing = c.Worker == nil || c.Worker.ID == ""
	case TypePutMaster:
		missing = c.Master == nil || c.Master.ID == ""
	case TypePutExecutor:
		missing = c.Executor == nil || c.Executor.AppID == "" || c.Executor.ID < 0
	default:
		if c.Type&IgnoreUnknownTypeFlag == 0 {
			return fmt.Errorf("%w %s", ErrUnknownType, c.Type)
		}
	}
	if missing {
		return fmt.Errorf("%s: %w", c.Type, errMissingPayload)
	}
	return nil
}

// Apply applies one command. It is deterministic (the same commands in the
// same order give the same state on every master), never panics on a
// malformed command, and leaves the state unchanged when it returns an
// error. touched, if not nil, is told every record put or deleted (the
// epoch and counters are not records).
func (s *State) Apply(c Command, touched func(Key)) error {
	if err := c.Check(); err != nil {
		return err
	}
	if touched == nil {
		touched = func(Key) {}
	}
	switch c.Type {
	case TypeBumpEpoch:
		s.Epoch++
	case TypePutApp:
		r := *c.App
		if old := s.Apps[r.ID]; old != nil && old.Finished() {
			// An app ends once. A later write of it (a change decided
			// before its end committed, or a second end) changes nothing,
			// so no order of writes can bring an ended app back.
			return nil
		}
		s.Apps[r.ID] = &r
		touched(Key{BucketApps, r.ID})
		s.NextAppNumber = max(s.NextAppNumber, idNumber(r.ID)+1)
		if r.Finished() {
			s.endedApps.add(aged{endedAt(r.EndedAt).UnixNano(), r.ID})
			s.dropExecutorsOf(r.ID, touched) // an ended app has none
			trim(s.Apps, &s.endedApps, c.Retain, (*AppRecord).Finished, func(a *AppRecord) *time.Time { return a.EndedAt }, BucketApps, touched)
		}
	case TypePutDriver:
		r := *c.Driver
		if old := s.Drivers[r.ID]; old != nil && old.Finished() {
			return nil // a driver ends once, as an app
		}
		s.Drivers[r.ID] = &r
		touched(Key{BucketDrivers, r.ID})
		s.NextDriverNumber = max(s.NextDriverNumber, idNumber(r.ID)+1)
		if r.Finished() {
			s.endedDrivers.add(aged{endedAt(r.EndedAt).UnixNano(), r.ID})
			trim(s.Drivers, &s.endedDrivers, c.Retain, (*DriverRecord).Finished, func(d *DriverRecord) *time.Time { return d.EndedAt }, BucketDrivers, touched)
		}
	case TypePutWorker:
		r := *c.Worker
		s.Workers[r.ID] = &r
		touched(Key{BucketWorkers, r.ID})
	case TypePutMaster:
		r := *c.Master
		s.Masters[r.ID] = &r
		touched(Key{BucketMasters, r.ID})
	case TypePutExecutor:
		r := *c.Executor
		if app := s.Apps[r.AppID]; app == nil || app.Finished() {
			return nil // an ended (or unknown) app places nothing more
		}
		s.Executors[r.Key()] = &r
		touched(Key{BucketExecutors, r.Key()})
	case TypeDeleteExecutor:
		deleteKey(s.Executors, BucketExecutors, c.ID, touched)
	case TypeDeleteApp:
		if old := s.Apps[c.ID]; old != nil && old.Finished() {
			s.endedApps.remove(aged{endedAt(old.EndedAt).UnixNano(), old.ID})
		}
		deleteKey(s.Apps, BucketApps, c.ID, touched)
		s.dropExecutorsOf(c.ID, touched)
	case TypeDeleteDriver:
		if old := s.Drivers[c.ID]; old != nil && old.Finished() {
			s.endedDrivers.remove(aged{endedAt(old.EndedAt).UnixNano(), old.ID})
		}
		deleteKey(s.Drivers, BucketDrivers, c.ID, touched)
	case TypeDeleteWorker:
		deleteKey(s.Workers, BucketWorkers, c.ID, touched)
	case TypeDeleteMaster:
		deleteKey(s.Masters, BucketMasters, c.ID, touched)
	}
	return nil // an ignorable unknown type: Check let it through, nothing to do
}

// dropExecutorsOf deletes the executor records of an app.
func (s *State) dropExecutorsOf(appID string, touched func(Key)) {
	prefix := appID + "/"
	for k := range s.Executors {
		if strings.HasPrefix(k, prefix) {
			delete(s.Executors, k)
			touched(Key{BucketExecutors, k})
		}
	}
}

func deleteKey[V any](m map[string]V, b Bucket, id string, touched func(Key)) {
	if _, ok := m[id]; ok {
		delete(m, id)
		touched(Key{b, id})
	}
}

// trim drops the oldest finished records beyond retain (retain < 1 keeps
// them all). Age is by end time then id, so every master drops the same.
func trim[V any](m map[string]V, x *endedIndex, retain int, finished func(V) bool, ended func(V) *time.Time, b Bucket, touched func(Key)) {
	if retain < 1 {
		return
	}
	build(x, m, finished, ended)
	excess := len(x.order) - retain
	if excess <= 0 {
		return
	}
	for _, a := range x.order[:excess] {
		delete(m, a.id)
		touched(Key{b, a.id})
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
