package persistence

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// FuzzApply replays a fuzzed history on a State, command by command. After
// every command the state must be valid (Validate), a refused command must
// have changed nothing, and every record that changed must have been
// reported to touched (the bbolt engine writes only those). At a fuzzed
// point the state goes through a snapshot and the rest of the history is
// applied to both: they must stay Equal.
func FuzzApply(f *testing.F) {
	for _, seed := range historySeeds() {
		f.Add(seed.program, seed.snapAt)
	}
	f.Fuzz(replayOnState)
}

// replayOnState is FuzzApply's body.
func replayOnState(t *testing.T, program []byte, snapAt uint16) {
	var cmds []Command
	for _, e := range readHistory(program) {
		cmds = append(cmds, e.cmds...) // a refused raw entry holds none
	}
	s := NewState()
	var restored *State
	at := int(snapAt) % (len(cmds) + 1)
	for i, c := range cmds {
		if i == at {
			restored = restore(t, s)
		}
		err := applyChecked(t, s, c)
		if restored == nil {
			continue
		}
		rerr := applyChecked(t, restored, c)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("%s: applied to the state: %v; to its snapshot: %v", c.Type, err, rerr)
		}
	}
	if restored == nil {
		restore(t, s) // the snapshot is of the final state
		return
	}
	if !restored.Equal(s) {
		t.Fatalf("the state restored from a snapshot at command %d ended different:\n got %+v\nwant %+v", at, restored, s)
	}
}

// applyChecked applies c to s and fails t if Apply broke one of its
// promises.
func applyChecked(t *testing.T, s *State, c Command) error {
	t.Helper()
	before := s.Clone()
	touched := map[Key]bool{}
	err := s.Apply(c, func(k Key) { touched[k] = true })
	if cerr := c.Check(); (err == nil) != (cerr == nil) {
		t.Fatalf("%s: Apply answered %v, Check %v", c.Type, err, cerr)
	}
	if err != nil && !s.Equal(before) {
		t.Fatalf("a refused %s (%v) changed the state", c.Type, err)
	}
	if verr := s.Validate(); verr != nil {
		t.Fatalf("after %s: %v", c.Type, verr)
	}
	for _, k := range changedKeys(before, s) {
		if !touched[k] {
			t.Fatalf("%s changed %v without reporting it", c.Type, k)
		}
	}
	for id := range s.Apps {
		if idNumber(id) >= s.NextAppNumber {
			t.Fatalf("after %s: app %s is not below the next app number %d", c.Type, id, s.NextAppNumber)
		}
	}
	for id := range s.Drivers {
		if idNumber(id) >= s.NextDriverNumber {
			t.Fatalf("after %s: driver %s is not below the next driver number %d", c.Type, id, s.NextDriverNumber)
		}
	}
	return err
}

// changedKeys lists the records put or deleted between a and b. Records
// are never modified in place, so a changed record is a different pointer.
func changedKeys(a, b *State) []Key {
	var keys []Key
	keys = appendChanged(keys, BucketApps, a.Apps, b.Apps)
	keys = appendChanged(keys, BucketDrivers, a.Drivers, b.Drivers)
	keys = appendChanged(keys, BucketWorkers, a.Workers, b.Workers)
	keys = appendChanged(keys, BucketMasters, a.Masters, b.Masters)
	return appendChanged(keys, BucketExecutors, a.Executors, b.Executors)
}

func appendChanged[R any](keys []Key, bucket Bucket, a, b map[string]*R) []Key {
	for id, r := range a {
		if b[id] != r {
			keys = append(keys, Key{bucket, id})
		}
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			keys = append(keys, Key{bucket, id})
		}
	}
	return keys
}

// restore writes s as the FSM's Persist does and reads it back.
func restore(t *testing.T, s *State) *State {
	t.Helper()
	var buf bytes.Buffer
	if err := (&fsmSnapshot{state: s.Clone()}).Persist(&bufferSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	r, err := decodeSnapshot(&buf)
	if err != nil {
		t.Fatalf("a snapshot of a state Apply built was refused: %v", err)
	}
	if !r.Equal(s) {
		t.Fatalf("restored from a snapshot:\n got %+v\nwant %+v", r, s)
	}
	return r
}

// restoreFSM snapshots f as Raft does and restores it into a new FSM.
func restoreFSM(t *testing.T, f *fsm) *fsm {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&bufferSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := &fsm{state: NewState(), log: f.log}
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatalf("restoring a snapshot of a state the FSM built: %v", err)
	}
	return g
}

type historySeed struct {
	program []byte
	snapAt  uint16
}

// historySeeds are what a master writes: a new leader's epoch, workers,
// apps and their executors, ends beyond Retain, drivers, a lost worker. They
// are short compact programs, since the fuzzer minimizes every input that
// finds new code (for up to a minute each); the raw entries are few.
func historySeeds() []historySeed {
	// Compact ops name records by index: app n is app-20261122100000-000n,
	// worker n is w(n+1); states and end minutes index the lists in
	// history_test.go.
	placements := []byte{
		opBumpEpoch, opPutMaster | opJoin, 0, // as a new leader starts
		opPutWorker, 0, opPutWorker, 1,
		opPutApp, 1, 0,
		opPutExecutor, 1, 0, 0, opPutExecutor | opJoin, 1, 1, 1, // app 1: executor 0 on w1, 1 on w2
		opDeleteExecutor, 1, 1,
		opEndApp, 1, 0, 1, 1, // app 1 finishes at minute 1, retain 1
		opPutApp, 2, 0, opPutExecutor | opJoin, 2, 0, 0,
		opEndApp, 2, 2, 2, 1, // app 2 killed: app 1 trimmed
		opPutExecutor, 1, 2, 0, // for a trimmed app: ignored
	}
	drivers := []byte{
		opPutWorker, 0,
		opPutDriver, 1, 0, 0, // submitted
		opPutDriver, 1, 1, 0, // launched on w1
		opEndDriver, 1, 0, 0, 1, // finished, retain 1
		opPutDriver, 2, 0, 0,
		opEndDriver, 2, 2, 1, 1, // killed a minute later: driver 1 trimmed
		opPutDriver, 1, 1, 0, // a late launch record of driver 1
		opDeleteDriver, 2,
	}
	workerLost := []byte{
		opPutWorker, 0, opPutWorker | opJoin, 1,
		opPutApp, 1, 0,
		opPutExecutor, 1, 0, 0, opPutExecutor | opJoin, 1, 1, 1,
		opDeleteWorker, 0, // takes executor 0 with it
		opPutExecutor, 1, 2, 0, // placed before the removal committed: ignored
		opDeleteWorker, 1, opDeleteExecutor | opJoin, 1, 1, // as the master removes a worker
		opPutWorker, 0, opPutExecutor, 1, 0, 0,
		opDeleteApp, 1,
	}
	w1 := WorkerRecord{ID: "w1", Host: "10.0.0.1", Port: 7078, Cores: 8}
	odd := slices.Concat(
		rawEntry(PutApp(app("app-20261122100000-0001"), 0)),
		rawEntry(PutWorker(w1), PutExecutor(ExecutorRecord{AppID: "app-20261122100000-0001", WorkerID: "w1", Cores: 1})),
		rawEntry(Command{Type: 77 | IgnoreUnknownTypeFlag}, BumpEpoch()),            // skipped, the rest applies
		rawEntry(Command{Type: TypeDeleteWorker | IgnoreUnknownTypeFlag, ID: "w1"}), // known: applied
		rawEntry(Command{Type: TypePutApp}, BumpEpoch()),                            // one refused, one applied
		[]byte{opOddCommand, 1, 1, 1, opOddCommand, 4, 0, opOddCommand, 3, 3, 0},
		rawEntry(Command{Type: 77}, BumpEpoch()), // unreadable: the FSM stops
	)
	// Each unreadable shape, after a history, ends it.
	unreadable := [][]byte{rawEntry(Command{Type: 77}, BumpEpoch()), rawBytes([]byte{200, 1, 2}), rawBytes([]byte{byte(TypePutApp), '{'})}
	// A time as another writer may encode it: read back from a snapshot it
	// is the same instant in another *time.Location.
	zoned := rawBytes([]byte("\x02" + `{"app":{"id":"app-20261122100000-0001","submittedAt":"2026-11-22T10:00:00+00:00","state":"WAITING"}}`))
	return []historySeed{
		{zoned, 1},
		{placements, 0}, {placements, 5}, {placements, 9},
		{drivers, 3}, {drivers, 6},
		{workerLost, 2}, {workerLost, 4},
		{odd, 1}, {odd, 4},
		{slices.Concat(placements, unreadable[0]), 3}, {slices.Concat(drivers, unreadable[1]), 2}, {slices.Concat(workerLost, unreadable[2]), 1},
		{slices.Concat(workerLost, drivers, placements), 12},
	}
}
