package persistence

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// Every tag has its entry, under the name the logs and messages have always
// used, and the table refuses an ambiguous tag.
func TestCommandTable(t *testing.T) {
	names := map[Type]string{
		TypeBumpEpoch: "BumpEpoch", TypePutApp: "PutApp", TypeDeleteApp: "DeleteApp",
		TypePutDriver: "PutDriver", TypeDeleteDriver: "DeleteDriver", TypePutWorker: "PutWorker",
		TypeDeleteWorker: "DeleteWorker", TypePutMaster: "PutMaster", TypeDeleteMaster: "DeleteMaster",
		TypePutExecutor: "PutExecutor", TypeDeleteExecutor: "DeleteExecutor", TypeEndSession: "EndSession",
		TypePutQueue: "PutQueue", TypeDeleteQueue: "DeleteQueue", TypePutTenant: "PutTenant", TypeDeleteTenant: "DeleteTenant", TypeAudit: "Audit",
		TypeRestore: "Restore", TypeEndedExecutor: "EndedExecutor",
	}
	if len(commandKinds) != len(names) {
		t.Errorf("the table has %d entries, want %d", len(commandKinds), len(names))
	}
	for tag, name := range names {
		if k, ok := kindOf(tag); !ok || k.tag != tag || k.name != name || tag.String() != name {
			t.Errorf("tag %d: entry %+v, String %q, want %s", uint8(tag), k, tag, name)
		}
		if got := (tag | IgnoreUnknownTypeFlag).String(); got != name {
			t.Errorf("tag %d with the flag is named %q, want %s", uint8(tag), got, name)
		}
	}
	for tag, want := range map[Type]string{typeBatch: "Batch", 0: "Type(0)", 77: "Type(77)", 77 | IgnoreUnknownTypeFlag: "Type(205)"} {
		if tag.String() != want {
			t.Errorf("tag %d is named %q, want %s", uint8(tag), tag, want)
		}
	}
	for _, bad := range [][]commandKind{
		{{tag: TypePutApp, name: "a"}, {tag: TypePutApp, name: "b"}},
		{{tag: typeBatch, name: "batch"}},
		{{tag: TypePutApp | IgnoreUnknownTypeFlag, name: "flagged"}},
		{{tag: 0, name: "zero"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("table %+v was accepted", bad)
				}
			}()
			indexKinds(bad)
		}()
	}
}

// The flag tells a master that does not know a type that it may skip it; a
// master that knows the type applies it. Check, Apply and Decode used to
// treat a known type with the flag as unknown, and skip it.
func TestKnownTypeWithTheFlagIsApplied(t *testing.T) {
	c := PutWorker(WorkerRecord{ID: "w1"})
	c.Type |= IgnoreUnknownTypeFlag
	data, err := Encode([]Command{c})
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := Decode(data)
	if err != nil || len(cmds) != 1 {
		t.Fatalf("decoded %v, %v; want the command", cmds, err)
	}
	s := NewState()
	if err := s.Apply(cmds[0], nil); err != nil || s.Workers["w1"] == nil {
		t.Fatalf("applied: %v, workers %v", err, s.Workers)
	}
	// Its payload is checked as without the flag.
	if err := (Command{Type: TypePutWorker | IgnoreUnknownTypeFlag}).Check(); !errors.Is(err, errMissingPayload) {
		t.Fatalf("a flagged PutWorker without its worker: %v", err)
	}
}

// DeleteWorker takes the executors placed on it, and says so; a placement
// on a worker the state does not hold is ignored.
func TestExecutorRecordsFollowTheirWorker(t *testing.T) {
	s := NewState()
	a := app("app-20261122100000-0001")
	for _, c := range []Command{
		PutWorker(WorkerRecord{ID: "w1"}), PutWorker(WorkerRecord{ID: "w2"}), PutApp(a, 0),
		PutExecutor(ExecutorRecord{AppID: a.ID, ID: 0, WorkerID: "w1"}),
		PutExecutor(ExecutorRecord{AppID: a.ID, ID: 1, WorkerID: "w2"}),
		PutExecutor(ExecutorRecord{AppID: a.ID, ID: 2, WorkerID: "w3"}), // never registered
	} {
		if err := s.Apply(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.Executors) != 2 {
		t.Fatalf("executors %v, want the 2 on registered workers", s.Executors)
	}
	var touched []Key
	if err := s.Apply(DeleteWorker("w1"), func(k Key) { touched = append(touched, k) }); err != nil {
		t.Fatal(err)
	}
	want := []Key{{BucketWorkers, "w1"}, {BucketExecutors, ExecutorKey(a.ID, 0)}}
	if len(touched) != 2 || touched[0] != want[0] || touched[1] != want[1] {
		t.Fatalf("touched %v, want %v", touched, want)
	}
	if len(s.Executors) != 1 || s.Executors[ExecutorKey(a.ID, 1)] == nil {
		t.Fatalf("executors after w1 left: %v", s.Executors)
	}
	if err := s.Apply(PutExecutor(ExecutorRecord{AppID: a.ID, ID: 3, WorkerID: "w1"}), nil); err != nil || len(s.Executors) != 1 {
		t.Fatalf("a placement committed after its worker left: %v, %v", err, s.Executors)
	}
}

// An app's executors are those of its id, not those whose key starts like
// it: an end used to drop every key with the app id as a prefix.
func TestAppEndDropsOnlyItsExecutors(t *testing.T) {
	s := NewState()
	for _, c := range []Command{
		PutWorker(WorkerRecord{ID: "w1"}), PutApp(app("a"), 0), PutApp(app("a/1"), 0),
		PutExecutor(ExecutorRecord{AppID: "a", ID: 0, WorkerID: "w1"}),
		PutExecutor(ExecutorRecord{AppID: "a/1", ID: 0, WorkerID: "w1"}),
		PutApp(finishedApp("a", t0), 0),
	} {
		if err := s.Apply(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.Executors) != 1 || s.Executors["a/1/0"] == nil {
		t.Fatalf("executors %v, want only a/1's", s.Executors)
	}
}

// Equal compares what a snapshot holds. A time read back from one has no
// monotonic reading and may be in another *time.Location for the same
// offset; Equal used to call such a restored state different.
func TestEqualAfterASnapshot(t *testing.T) {
	s := NewState()
	live := app("app-20261122100000-0001")
	live.SubmittedAt = time.Now() // with a monotonic reading, as the master writes
	var parsed AppRecord
	if err := json.Unmarshal([]byte(`{"id":"app-20261122100000-0002","submittedAt":"2026-11-22T10:00:00+00:00"}`), &parsed); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Command{PutApp(live, 0), PutApp(parsed, 0)} {
		if err := s.Apply(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := restore(t, s) // which fails the test unless r.Equal(s)
	if err := r.Apply(BumpEpoch(), nil); err != nil || r.Equal(s) {
		t.Fatalf("a changed state is still Equal: %v", err)
	}
}

// A refused command's error names the payload it lacks.
func TestCheckNamesTheMissingPayload(t *testing.T) {
	err := Command{Type: TypePutExecutor, Executor: &ExecutorRecord{ID: -1, AppID: "a"}}.Check()
	if !errors.Is(err, errMissingPayload) || !strings.Contains(err.Error(), "PutExecutor") || !strings.Contains(err.Error(), "executor") {
		t.Fatalf("got %v", err)
	}
}

// A UI session's end is kept until the session expires, and dropped by the
// first end written after that, on every master alike.
func TestEndSessionKeepsTheEndUntilExpiry(t *testing.T) {
	s := NewState()
	apply := func(c Command) {
		t.Helper()
		if err := s.Apply(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	apply(EndSession(EndedSession{ID: "a", Expires: 200, At: 100}))
	apply(EndSession(EndedSession{ID: "b", Expires: 400, At: 150}))
	apply(EndSession(EndedSession{ID: "old", Expires: 150, At: 160})) // expired already: nothing to keep
	if len(s.EndedSessions) != 2 || s.EndedSessions["a"] != 200 || s.EndedSessions["b"] != 400 {
		t.Errorf("ended sessions %v, want a and b", s.EndedSessions)
	}
	apply(EndSession(EndedSession{ID: "c", Expires: 500, At: 300}))
	if _, ok := s.EndedSessions["a"]; ok || len(s.EndedSessions) != 2 {
		t.Errorf("ended sessions %v, want a forgotten once expired", s.EndedSessions)
	}
	if c := s.Clone(); !c.Equal(s) {
		t.Error("a clone differs")
	}
	if err := (Command{Type: TypeEndSession}).Check(); err == nil {
		t.Error("an EndSession without its session was accepted")
	}
}
