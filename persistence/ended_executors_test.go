package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

func mustApply(t *testing.T, s *State, cmds ...Command) {
	t.Helper()
	for _, c := range cmds {
		if err := s.Apply(c, nil); err != nil {
			t.Fatalf("%s: %v", c.Type, err)
		}
	}
}

func endedIDs(s *State, appID string) []int {
	var ids []int
	if r := s.EndedExecutors[appID]; r != nil {
		for _, st := range r.Executors {
			ids = append(ids, st.ID)
		}
	}
	return ids
}

func placedOn(appID string, id int, worker string) Command {
	return PutExecutor(ExecutorRecord{AppID: appID, ID: id, WorkerID: worker, Cores: 1})
}

// An executor's end keeps its status for the app and drops its placement;
// a second end of it (another write ended it first) and the end of an
// executor never placed keep nothing; a worker's removal keeps the ends
// written before it in its batch; the app's end drops the record.
func TestEndedExecutorsKeptForTheirApp(t *testing.T) {
	s := NewState()
	a := app("app-20261122100000-0001")
	exit3 := 3
	mustApply(t, s, PutWorker(WorkerRecord{ID: "w1", Cores: 4}), PutWorker(WorkerRecord{ID: "w2", Cores: 4}), PutApp(a, 0),
		placedOn(a.ID, 0, "w1"), placedOn(a.ID, 1, "w1"), placedOn(a.ID, 2, "w2"))
	mustApply(t, s, EndExecutor(a.ID, wire.ExecutorStatus{ID: 0, WorkerID: "w1", State: wire.ExecutorFailed, ExitCode: &exit3, Message: "exited with code 3"})...)
	mustApply(t, s, EndExecutor(a.ID, wire.ExecutorStatus{ID: 0, WorkerID: "w1", State: wire.ExecutorLost})...)   // ended already
	mustApply(t, s, EndExecutor(a.ID, wire.ExecutorStatus{ID: 7, WorkerID: "w1", State: wire.ExecutorKilled})...) // never placed
	if got := endedIDs(s, a.ID); len(got) != 1 || got[0] != 0 {
		t.Fatalf("ended executors %v, want [0]", got)
	}
	if st := s.EndedExecutors[a.ID].Executors[0]; st.State != wire.ExecutorFailed || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("kept %+v, want the first end as written", st)
	}
	if s.Executors[ExecutorKey(a.ID, 0)] != nil || len(s.Executors) != 2 {
		t.Fatalf("placements %v, want executor 0's gone", s.Executors)
	}
	// A worker's removal: the master writes its executors' ends first.
	removal := append(EndExecutor(a.ID, wire.ExecutorStatus{ID: 2, WorkerID: "w2", State: wire.ExecutorLost}), DeleteWorker("w2"))
	mustApply(t, s, removal...)
	if got := endedIDs(s, a.ID); len(got) != 2 || got[1] != 2 || len(s.Executors) != 1 {
		t.Fatalf("after w2's removal: ended %v, placements %v", got, s.Executors)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("state with ended executors refused: %v", err)
	}
	mustApply(t, s, PutApp(finishedApp(a.ID, t0), 10))
	if s.EndedExecutors[a.ID] != nil || len(s.Executors) != 0 {
		t.Fatalf("the app's end left ended %v, placements %v", s.EndedExecutors, s.Executors)
	}
	// An ended app keeps nothing new either (its executors are gone).
	mustApply(t, s, EndExecutor(a.ID, wire.ExecutorStatus{ID: 1, State: wire.ExecutorKilled})...)
	if s.EndedExecutors[a.ID] != nil {
		t.Fatal("an ended app kept an executor's end")
	}
}

// The last EndedExecutorsKept ends are kept, oldest first, and the record
// an older state shared is never changed in place.
func TestEndedExecutorsBounded(t *testing.T) {
	s := NewState()
	a := app("app-20261122100000-0001")
	mustApply(t, s, PutWorker(WorkerRecord{ID: "w1", Cores: 4}), PutApp(a, 0))
	n := EndedExecutorsKept + 20
	for i := range n {
		mustApply(t, s, placedOn(a.ID, i, "w1"))
		mustApply(t, s, EndExecutor(a.ID, wire.ExecutorStatus{ID: i, WorkerID: "w1", State: wire.ExecutorExited})...)
		if i == 10 {
			before := s.Clone()
			mustApply(t, s, placedOn(a.ID, 1000, "w1"))
			mustApply(t, s, EndExecutor(a.ID, wire.ExecutorStatus{ID: 1000, WorkerID: "w1", State: wire.ExecutorExited})...)
			if got := endedIDs(before, a.ID); len(got) != 11 {
				t.Fatalf("a clone's record changed in place: %v", got)
			}
		}
	}
	got := endedIDs(s, a.ID) // n+1 ends (1000 among them): the first 21 go
	if len(got) != EndedExecutorsKept || got[len(got)-1] != n-1 || got[0] != n-EndedExecutorsKept {
		t.Fatalf("kept %d ended executors %v..., want the last %d (up to %d)", len(got), got[:3], EndedExecutorsKept, n-1)
	}
}

// The ends survive what a new leader reads: a snapshot and bolt's file.
// A snapshot whose ended executors break an invariant is refused, and one
// with ended executors of an app that ended is repaired.
func TestEndedExecutorsReadBack(t *testing.T) {
	a := app("app-20261122100000-0001")
	cmds := append([]Command{PutWorker(WorkerRecord{ID: "w1", Cores: 4}), PutApp(a, 0), placedOn(a.ID, 0, "w1"), placedOn(a.ID, 1, "w1")},
		EndExecutor(a.ID, wire.ExecutorStatus{ID: 0, WorkerID: "w1", State: wire.ExecutorFailed, Message: "exited with code 1"})...)
	s := NewState()
	mustApply(t, s, cmds...)

	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(s); err != nil {
		t.Fatal(err)
	}
	snap, err := decodeSnapshot(bytes.NewReader(buf.Bytes()))
	if err != nil || !snap.Equal(s) || len(endedIDs(snap, a.ID)) != 1 {
		t.Fatalf("snapshot read back: %v, ended %v", err, endedIDs(snap, a.ID))
	}

	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.Write(ctx, cmds); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b2, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if got, err := b2.Load(ctx); err != nil || !got.Equal(s) {
		t.Fatalf("bolt read back: %v\n got %+v\nwant %+v", err, got, s)
	}

	twice := s.Clone()
	twice.EndedExecutors[a.ID] = &EndedExecutorsRecord{AppID: a.ID, Executors: []wire.ExecutorStatus{{ID: 0}, {ID: 0}}}
	if err := twice.Validate(); err == nil {
		t.Error("an executor listed twice was accepted")
	}
	over := s.Clone()
	over.EndedExecutors[a.ID] = &EndedExecutorsRecord{AppID: a.ID, Executors: make([]wire.ExecutorStatus, EndedExecutorsKept+1)}
	if err := over.Validate(); err == nil {
		t.Error("more ended executors than kept were accepted")
	}
	stale := s.Clone()
	stale.Apps[a.ID] = &AppRecord{ID: a.ID, State: wire.AppFinished}
	stale.Executors = map[string]*ExecutorRecord{}
	if stale.Repair(); stale.EndedExecutors[a.ID] != nil || stale.Validate() != nil {
		t.Errorf("an ended app's leftover ended executors: %v, %v", stale.EndedExecutors, stale.Validate())
	}
}

// Whatever order a log holds them in, no executor is listed twice, its
// message is cut, and a state an earlier version left with one listed
// twice or too many is repaired on reading, not refused.
func TestEndedExecutorsOnceEach(t *testing.T) {
	s := NewState()
	a := app("app-20261122100000-0001")
	long := strings.Repeat("x", 100_000)
	mustApply(t, s, PutWorker(WorkerRecord{ID: "w1", Cores: 4}), PutApp(a, 0), placedOn(a.ID, 0, "w1"))
	end := EndExecutor(a.ID, wire.ExecutorStatus{ID: 0, WorkerID: "w1", State: wire.ExecutorFailed, Message: long})
	mustApply(t, s, end[0], end[0]) // kept once, the placement still there
	mustApply(t, s, end[1], placedOn(a.ID, 0, "w1"), end[0])
	if got := endedIDs(s, a.ID); len(got) != 1 {
		t.Fatalf("ended %v, want executor 0 once", got)
	}
	if msg := s.EndedExecutors[a.ID].Executors[0].Message; len(msg) > MaxEndedMessage+40 || !strings.Contains(msg, "bytes cut") {
		t.Errorf("a message of %d bytes kept as %d bytes", len(long), len(msg))
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}

	left := s.Clone()
	many := make([]wire.ExecutorStatus, 0, EndedExecutorsKept+3)
	for i := range EndedExecutorsKept + 2 {
		many = append(many, wire.ExecutorStatus{ID: i})
	}
	many = append(many, wire.ExecutorStatus{ID: 5})
	left.EndedExecutors[a.ID] = &EndedExecutorsRecord{AppID: a.ID, Executors: many}
	if n := left.Repair(); n != 3 || left.Validate() != nil {
		t.Fatalf("repair dropped %d, then %v", n, left.Validate())
	}
	if got := endedIDs(left, a.ID); len(got) != EndedExecutorsKept || got[len(got)-1] != EndedExecutorsKept+1 {
		t.Errorf("repaired to %d: ...%v", len(got), got[len(got)-3:])
	}
	if len(many) != EndedExecutorsKept+3 {
		t.Error("repair changed the record it read in place")
	}
}
