package persistence

import (
	"fmt"
	"maps"
)

// recordKinds is the one place a kind of record the State keeps by key is
// declared: its bucket (what Key names, and bolt's bucket for it), the map
// of State that holds it, and the id a record is kept under. NewState,
// Clone, a snapshot read back, Validate, a restore, bolt's reads and
// writes and the Put and Delete commands all go through it. So a new kind
// is its record type, its field in State (whose JSON name is part of the
// snapshot format) and an entry here, declared and listed in recordKinds
// (optional: older snapshots lack it); its commands are entries in
// commandKinds, whose apply funcs can be the kind's putFrom and
// deleteByID. TestRecordKindsAreTheStatesMaps checks the entries against
// State's fields, so a map of records left out of the table fails it.
//
// The order is the order in which bolt reads the buckets and Validate
// checks keys: Validate reports the first problem in it.
var (
	appKind = &kind[AppRecord]{bucket: BucketApps, key: (*AppRecord).key,
		field: func(s *State) *map[string]*AppRecord { return &s.Apps }}
	driverKind = &kind[DriverRecord]{bucket: BucketDrivers, key: (*DriverRecord).key,
		field: func(s *State) *map[string]*DriverRecord { return &s.Drivers }}
	workerKind = &kind[WorkerRecord]{bucket: BucketWorkers, key: (*WorkerRecord).key,
		field: func(s *State) *map[string]*WorkerRecord { return &s.Workers }}
	masterKind = &kind[MasterRecord]{bucket: BucketMasters, key: (*MasterRecord).key, keptByRestore: true,
		field: func(s *State) *map[string]*MasterRecord { return &s.Masters }}
	executorKind = &kind[ExecutorRecord]{bucket: BucketExecutors, key: (*ExecutorRecord).Key,
		field: func(s *State) *map[string]*ExecutorRecord { return &s.Executors }}
	queueKind = &kind[QueueRecord]{bucket: BucketQueues, key: func(r *QueueRecord) string { return r.Name }, optional: true,
		field: func(s *State) *map[string]*QueueRecord { return &s.Queues }}
	tenantKind = &kind[TenantRecord]{bucket: BucketTenants, key: func(r *TenantRecord) string { return r.Name }, optional: true,
		field: func(s *State) *map[string]*TenantRecord { return &s.Tenants }}
	endedExecutorsKind = &kind[EndedExecutorsRecord]{bucket: BucketEndedExecutors, key: func(r *EndedExecutorsRecord) string { return r.AppID }, optional: true,
		field: func(s *State) *map[string]*EndedExecutorsRecord { return &s.EndedExecutors }}

	recordKinds = []recordKind{appKind, driverKind, workerKind, masterKind, executorKind, queueKind, tenantKind, endedExecutorsKind}
)

// kind is one kind of record, generic over its type so that every use is
// typed: no reflection, no type switch per kind.
type kind[R any] struct {
	bucket Bucket
	// field is where a State keeps the records, by key: a pointer to the
	// map, so that a missing map can be made and a clone given its copy.
	field func(*State) *map[string]*R
	key   func(*R) string
	// optional: the kind came after the first release, so its field is
	// omitempty in the State's JSON and a State built in memory may lack
	// the map (Validate accepts that). The older kinds' maps must exist.
	optional bool
	// keptByRestore: the records belong to the cluster, not to what it
	// runs, and a restore keeps this cluster's instead of the snapshot's
	// (the masters: their API addresses are this cluster's).
	keptByRestore bool
}

// recordKind is a kind whatever its record type: what the code that goes
// over every kind (or finds one by bucket) asks of it.
type recordKind interface {
	name() Bucket
	// makeMap gives s an empty map of the kind if it has none (a snapshot
	// of an empty map decodes as nil).
	makeMap(s *State)
	// copyMap replaces s's map by a copy (records are shared: they are
	// never modified in place).
	copyMap(s *State)
	// missing reports a map that Validate requires and s lacks.
	missing(s *State) bool
	// validate checks that every record is there and under its id.
	validate(s *State) error
	// restored puts now's records of the kind in place of old's for a
	// restore, and tells touched what changed.
	restored(old, now *State, touched func(Key))
	// record is the record id, if s holds it (as any, for bolt to encode).
	record(s *State, id string) (any, bool)
	// decode adds a record as bolt stores it to s, under id.
	decode(s *State, id string, data []byte) error
}

func (k *kind[R]) name() Bucket { return k.bucket }

func (k *kind[R]) makeMap(s *State) {
	if m := k.field(s); *m == nil {
		*m = map[string]*R{}
	}
}

func (k *kind[R]) copyMap(s *State) {
	m := k.field(s)
	*m = maps.Clone(*m)
}

func (k *kind[R]) missing(s *State) bool { return !k.optional && *k.field(s) == nil }

func (k *kind[R]) validate(s *State) error { return validateKeys(k.bucket, *k.field(s), k.key) }

func (k *kind[R]) restored(old, now *State, touched func(Key)) {
	if k.keptByRestore {
		*k.field(now) = *k.field(old)
		return // nothing changed
	}
	touchAll(k.bucket, *k.field(old), *k.field(now), touched)
}

func (k *kind[R]) record(s *State, id string) (any, bool) {
	r, ok := (*k.field(s))[id]
	return r, ok
}

func (k *kind[R]) decode(s *State, id string, data []byte) error {
	k.makeMap(s)
	return decodeInto(id, data, *k.field(s))
}

// put puts r into s under its id, and tells touched. A State built in
// memory may lack the map of an optional kind: put makes it.
func (k *kind[R]) put(s *State, r *R, touched func(Key)) {
	m := k.field(s)
	if *m == nil {
		*m = map[string]*R{}
	}
	id := k.key(r)
	(*m)[id] = r
	touched(Key{k.bucket, id})
}

// delete removes the record id, if s holds it, and tells touched.
func (k *kind[R]) delete(s *State, id string, touched func(Key)) {
	m := *k.field(s)
	if _, ok := m[id]; ok {
		delete(m, id)
		touched(Key{k.bucket, id})
	}
}

// putFrom is the apply func of a command that only puts the record it
// carries (payload reads it from the command; commandKinds has checked it
// is there). The state keeps a copy, not the command's record.
func (k *kind[R]) putFrom(payload func(Command) *R) func(*State, Command, func(Key)) {
	return func(s *State, c Command, touched func(Key)) {
		r := *payload(c)
		k.put(s, &r, touched)
	}
}

// deleteByID is the apply func of a command that only deletes the record
// its ID names.
func (k *kind[R]) deleteByID(s *State, c Command, touched func(Key)) { k.delete(s, c.ID, touched) }

// kindByBucket indexes recordKinds by bucket.
var kindByBucket = indexRecordKinds(recordKinds)

// indexRecordKinds refuses, at start, a table that names a bucket twice
// (two kinds would share bolt's bucket and Key's name).
func indexRecordKinds(kinds []recordKind) map[Bucket]recordKind {
	byBucket := make(map[Bucket]recordKind, len(kinds))
	for _, k := range kinds {
		if _, dup := byBucket[k.name()]; dup || k.name() == "" {
			panic(fmt.Sprintf("persistence: record bucket %q is empty or used twice", k.name()))
		}
		byBucket[k.name()] = k
	}
	return byBucket
}

// makeMaps gives s an empty map of every kind it lacks.
func (s *State) makeMaps() {
	for _, k := range recordKinds {
		k.makeMap(s)
	}
}

// record returns the record k names, if the state has it.
func (s *State) record(k Key) (any, bool) {
	if rk := kindByBucket[k.Bucket]; rk != nil {
		return rk.record(s, k.ID)
	}
	return nil, false
}
