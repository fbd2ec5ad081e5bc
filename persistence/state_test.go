package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func app(id string) AppRecord {
	return AppRecord{ID: id, Desc: wire.AppDescription{Name: id, Command: []string{"x"}}, SubmittedAt: t0, State: wire.AppWaiting}
}

func finishedApp(id string, ended time.Time) AppRecord {
	a := app(id)
	a.State, a.EndedAt = wire.AppFinished, &ended
	return a
}

func TestApplyEachCommand(t *testing.T) {
	s := NewState()
	var touched []Key
	rec := func(k Key) { touched = append(touched, k) }
	cmds := []Command{
		BumpEpoch(), BumpEpoch(),
		PutApp(app("app-20261122100000-0007"), 0),
		PutDriver(DriverRecord{ID: "driver-20261122100000-0003", State: wire.DriverSubmitted}, 0),
		PutWorker(WorkerRecord{ID: "w1", Host: "127.0.0.1", Port: 1, Cores: 4}),
		PutMaster(MasterRecord{ID: "m1", APIAddr: "http://127.0.0.1:7077"}),
	}
	for _, c := range cmds {
		if err := s.Apply(c, rec); err != nil {
			t.Fatalf("%s: %v", c.Type, err)
		}
	}
	if s.Epoch != 2 || len(s.Apps) != 1 || len(s.Drivers) != 1 || len(s.Workers) != 1 || len(s.Masters) != 1 {
		t.Fatalf("state after puts: %+v", s)
	}
	if s.NextAppNumber != 8 || s.NextDriverNumber != 4 {
		t.Errorf("next numbers %d %d, want 8 4", s.NextAppNumber, s.NextDriverNumber)
	}
	if len(touched) != 4 {
		t.Errorf("touched %v, want the 4 records", touched)
	}
	for _, c := range []Command{{Type: TypeDeleteApp, ID: "app-20261122100000-0007"}, {Type: TypeDeleteDriver, ID: "driver-20261122100000-0003"}, DeleteWorker("w1"), DeleteMaster("m1"), DeleteWorker("nope")} {
		if err := s.Apply(c, nil); err != nil {
			t.Fatalf("%s: %v", c.Type, err)
		}
	}
	if !s.Empty() || len(s.Masters) != 0 {
		t.Fatalf("state after deletes: %+v", s)
	}
	// Deleting an app does not lower the next number: ids are never reused.
	if s.NextAppNumber != 8 {
		t.Errorf("next app number %d after delete, want 8", s.NextAppNumber)
	}
}

func TestApplyMalformedLeavesStateUnchanged(t *testing.T) {
	s := NewState()
	_ = s.Apply(PutApp(app("a-1"), 0), nil)
	before := s.Clone()
	bad := []Command{
		{Type: TypePutApp},
		{Type: TypePutApp, App: &AppRecord{}},
		{Type: TypePutDriver},
		{Type: TypePutWorker, Worker: &WorkerRecord{}},
		{Type: TypePutMaster},
		{Type: 99},
		{Type: 0},
	}
	for _, c := range bad {
		if err := s.Apply(c, nil); err == nil {
			t.Errorf("%s with a bad payload applied without error", c.Type)
		}
	}
	if !s.Equal(before) {
		t.Fatalf("state changed by malformed commands")
	}
	// An unknown type marked ignorable is skipped without an error.
	if err := s.Apply(Command{Type: 99 | IgnoreUnknownTypeFlag}, nil); err != nil {
		t.Fatalf("ignorable unknown type: %v", err)
	}
}

func TestFinishedAppsTrimmedOldestFirst(t *testing.T) {
	s := NewState()
	_ = s.Apply(PutApp(app("active"), 0), nil)
	for i := 0; i < 5; i++ {
		_ = s.Apply(PutApp(finishedApp(fmt.Sprintf("done-%d", i), t0.Add(time.Duration(i)*time.Minute)), 3), nil)
	}
	want := []string{"active", "done-2", "done-3", "done-4"}
	for _, id := range want {
		if _, ok := s.Apps[id]; !ok {
			t.Errorf("%s was dropped", id)
		}
	}
	if len(s.Apps) != len(want) {
		t.Errorf("kept %d apps, want %d", len(s.Apps), len(want))
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	limit := 3
	a := app("app-1")
	a.ExecutorLimit = &limit
	a.IdempotencyKey = "k-1"
	cases := [][]Command{
		{BumpEpoch()},
		{PutApp(a, 10)},
		{BumpEpoch(), PutMaster(MasterRecord{ID: "m1", APIAddr: "http://x"}), DeleteWorker("w")},
	}
	for _, cmds := range cases {
		data, err := Encode(cmds)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, cmds) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, cmds)
		}
	}
}

func TestDecodeUnknownTypes(t *testing.T) {
	// An ignorable unknown command inside a batch is dropped, the rest kept.
	items, _ := json.Marshal([]batchItem{
		{Type: TypeBumpEpoch, Payload: json.RawMessage(`{}`)},
		{Type: 77 | IgnoreUnknownTypeFlag, Payload: json.RawMessage(`{"future":true}`)},
	})
	cmds, err := Decode(append([]byte{byte(typeBatch)}, items...))
	if err != nil || len(cmds) != 1 || cmds[0].Type != TypeBumpEpoch {
		t.Fatalf("batch with ignorable unknown: %v %+v", err, cmds)
	}
	if cmds, err := Decode([]byte{byte(77 | IgnoreUnknownTypeFlag), '{', '}'}); err != nil || len(cmds) != 0 {
		t.Fatalf("single ignorable unknown: %v %+v", err, cmds)
	}
	if _, err := Decode([]byte{77, '{', '}'}); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("unknown type without the flag: %v", err)
	}
	for _, data := range [][]byte{nil, {byte(TypePutApp)}, {byte(TypePutApp), '{'}, {byte(typeBatch), '['}} {
		if _, err := Decode(data); err == nil {
			t.Errorf("Decode(%q) accepted malformed data", data)
		}
	}
}

func TestBoltSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := context.Background()
	b, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	cmds := []Command{
		BumpEpoch(),
		PutApp(app("app-20261122100000-0001"), 0),
		PutApp(app("app-20261122100000-0002"), 0),
		PutWorker(WorkerRecord{ID: "w1", Cores: 8}),
		PutDriver(DriverRecord{ID: "driver-20261122100000-0004", State: wire.DriverSubmitted}, 0),
	}
	if err := b.Write(ctx, cmds); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, []Command{{Type: TypeDeleteApp, ID: "app-20261122100000-0001"}, BumpEpoch()}); err != nil {
		t.Fatal(err)
	}
	want, _ := b.Load(ctx)

	// A second process cannot open the file while the first holds it.
	if _, err := OpenBolt(path); err == nil {
		t.Fatal("a second OpenBolt of a held file succeeded")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	got, _ := b2.Load(ctx)
	if !got.Equal(want) {
		t.Fatalf("after reopen:\n got %+v\nwant %+v", got, want)
	}
	if got.Epoch != 2 || len(got.Apps) != 1 || got.NextAppNumber != 3 || got.NextDriverNumber != 5 {
		t.Fatalf("unexpected state after reopen: %+v", got)
	}
}

func TestEnginesRejectUseAfterClose(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	m := NewMemory()
	m.Close()
	for _, e := range []Engine{b, m} {
		if err := e.Write(context.Background(), []Command{BumpEpoch()}); !errors.Is(err, ErrClosed) {
			t.Errorf("%T.Write after Close: %v", e, err)
		}
		if _, err := e.Load(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("%T.Load after Close: %v", e, err)
		}
	}
}

func TestExecutorRecordsFollowTheirApp(t *testing.T) {
	s := NewState()
	a := app("app-20261122100000-0001")
	b := app("app-20261122100000-0002")
	cmds := []Command{
		PutWorker(WorkerRecord{ID: "w1", Cores: 4}), PutWorker(WorkerRecord{ID: "w2", Cores: 4}),
		PutApp(a, 0), PutApp(b, 0),
		PutExecutor(ExecutorRecord{AppID: a.ID, ID: 0, WorkerID: "w1", Cores: 2}),
		PutExecutor(ExecutorRecord{AppID: a.ID, ID: 1, WorkerID: "w2", Cores: 2}),
		PutExecutor(ExecutorRecord{AppID: b.ID, ID: 0, WorkerID: "w1", Cores: 1}),
		DeleteExecutor(a.ID, 1),
	}
	for _, c := range cmds {
		if err := s.Apply(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.Executors) != 2 || s.Executors[ExecutorKey(a.ID, 0)].WorkerID != "w1" {
		t.Fatalf("executors %v", s.Executors)
	}
	// An app that ends takes its executor records with it.
	if err := s.Apply(PutApp(finishedApp(a.ID, t0), 10), nil); err != nil {
		t.Fatal(err)
	}
	if len(s.Executors) != 1 || s.Executors[ExecutorKey(b.ID, 0)] == nil {
		t.Fatalf("after the app ended: %v", s.Executors)
	}
	if err := s.Apply(Command{Type: TypeDeleteApp, ID: b.ID}, nil); err != nil || len(s.Executors) != 0 {
		t.Fatalf("after the app was deleted: %v %v", err, s.Executors)
	}
	if err := s.Apply(Command{Type: TypePutExecutor, Executor: &ExecutorRecord{ID: 1}}, nil); err == nil {
		t.Fatal("an executor record without its app was accepted")
	}
}

// An app or driver ends once: a later write of it (decided before its end
// committed, or a second end) changes nothing, in whatever order writes
// reach the log. An ended app places no executor.
func TestEndedRecordsStayEnded(t *testing.T) {
	s := NewState()
	ended := t0.Add(time.Minute)
	killed := app("app-20261122100000-0001")
	killed.State, killed.EndedAt = wire.AppKilled, &ended
	limited := app("app-20261122100000-0001")
	limited.ExecutorLimit = new(int)
	finished := finishedApp("app-20261122100000-0001", ended.Add(time.Second))
	steps := []Command{
		PutWorker(WorkerRecord{ID: "w1", Cores: 4}), // so that only the app's end stops the placement
		PutApp(app("app-20261122100000-0001"), 0),
		PutApp(killed, 0),
		PutApp(limited, 0),  // a limit change decided before the kill committed
		PutApp(finished, 0), // a second end
		PutExecutor(ExecutorRecord{AppID: "app-20261122100000-0001", ID: 3, WorkerID: "w1", Cores: 1}),
		PutExecutor(ExecutorRecord{AppID: "app-unknown-0001", ID: 0, WorkerID: "w1", Cores: 1}),
	}
	for _, c := range steps {
		if err := s.Apply(c, nil); err != nil {
			t.Fatalf("%s: %v", c.Type, err)
		}
	}
	if got := s.Apps["app-20261122100000-0001"]; got.State != wire.AppKilled || got.ExecutorLimit != nil {
		t.Fatalf("app after later writes: %s limit %v, want KILLED with no limit", got.State, got.ExecutorLimit)
	}
	if len(s.Executors) != 0 {
		t.Fatalf("executors placed for an ended or unknown app: %v", s.Executors)
	}
	d := DriverRecord{ID: "driver-20261122100000-0001", State: wire.DriverSubmitted}
	dKilled := d
	dKilled.State, dKilled.EndedAt = wire.DriverKilled, &ended
	dRunning := d
	dRunning.State, dRunning.WorkerID = wire.DriverRunning, "w1"
	for _, c := range []Command{PutDriver(d, 0), PutDriver(dKilled, 0), PutDriver(dRunning, 0)} {
		if err := s.Apply(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Drivers[d.ID]; got.State != wire.DriverKilled {
		t.Fatalf("driver after a late launch record: %s, want KILLED", got.State)
	}
}

// The count of ended records that trimming relies on is rebuilt from a
// state read back (a snapshot), and kept exact by every later apply.
func TestTrimAfterSnapshotAndDeletes(t *testing.T) {
	s := NewState()
	for i := range 5 {
		a := finishedApp(fmt.Sprintf("app-20261122100000-%04d", i), t0.Add(time.Duration(i)*time.Second))
		if err := s.Apply(PutApp(a, 0), nil); err != nil {
			t.Fatal(err)
		}
	}
	r := restore(t, s)
	if err := r.Apply(Command{Type: TypeDeleteApp, ID: "app-20261122100000-0004"}, nil); err != nil { // an ended one goes
		t.Fatal(err)
	}
	newest := finishedApp("app-20261122100000-0009", t0.Add(time.Hour))
	if err := r.Apply(PutApp(newest, 3), nil); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for id := range r.Apps {
		kept = append(kept, id)
	}
	slices.Sort(kept)
	want := []string{"app-20261122100000-0002", "app-20261122100000-0003", "app-20261122100000-0009"}
	if !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want the 3 newest %v", kept, want)
	}
}

// One app ending while many ended ones are retained: what every master
// applies at every end, and a restarted one thousands of times in a row.
func BenchmarkApplyAppEnd(b *testing.B) {
	for _, retained := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("retained=%d", retained), func(b *testing.B) {
			s := NewState()
			for i := range retained {
				a := finishedApp(fmt.Sprintf("app-20261122100000-%06d", i), t0.Add(time.Duration(i)*time.Millisecond))
				s.Apps[a.ID] = &a
			}
			b.ResetTimer()
			for i := range b.N {
				a := finishedApp(fmt.Sprintf("app-20261122110000-%06d", i), t0.Add(time.Hour+time.Duration(i)))
				if err := s.Apply(PutApp(a, retained), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// One audit entry written to a full audit log: every write of a busy
// cluster once MaxAuditEntries are kept (100,000 worker registrations fill
// it). A copy of the log per write made this O(entries).
func BenchmarkApplyAuditAtCap(b *testing.B) {
	s := NewState()
	for i := range MaxAuditEntries {
		s.Audit = append(s.Audit, wire.AuditEntry{Time: t0.Add(time.Duration(i)), Principal: "worker", Route: "POST /v1/workers", Outcome: "ok"})
	}
	s.AuditCount = MaxAuditEntries
	b.ResetTimer()
	for i := range b.N {
		e := wire.AuditEntry{Time: t0.Add(time.Hour + time.Duration(i)), Principal: "secret", Route: "POST /v1/apps", Outcome: "ok"}
		if err := s.Apply(Audit(AuditRecord{Entry: e}), nil); err != nil {
			b.Fatal(err)
		}
	}
	if len(s.Audit) != MaxAuditEntries {
		b.Fatalf("%d entries kept, want %d", len(s.Audit), MaxAuditEntries)
	}
}

// One audit entry of full fields (each cut to wire.MaxAuditText, as an
// attacker's would be) written to a log at MaxAuditBytes: the byte bound,
// not the count, drops the oldest.
func BenchmarkApplyAuditAtByteCap(b *testing.B) {
	s := NewState()
	long := strings.Repeat("a", wire.MaxAuditText)
	entry := func(t time.Time) wire.AuditEntry {
		return wire.AuditEntry{Time: t, Principal: long, Tenant: long, Route: long, Target: long, Outcome: long}
	}
	// Full once a write no longer lengthens the log.
	for i := 0; i == 0 || len(s.Audit) == i; i++ {
		if err := s.Apply(Audit(AuditRecord{Entry: entry(t0.Add(time.Duration(i)))}), nil); err != nil {
			b.Fatal(err)
		}
	}
	kept := len(s.Audit)
	if kept >= MaxAuditEntries {
		b.Fatalf("%d entries kept: the count, not the bytes, bounds the log", kept)
	}
	b.ResetTimer()
	for i := range b.N {
		if err := s.Apply(Audit(AuditRecord{Entry: entry(t0.Add(time.Hour + time.Duration(i)))}), nil); err != nil {
			b.Fatal(err)
		}
	}
	if len(s.Audit) != kept || s.auditSize() > MaxAuditBytes {
		b.Fatalf("%d entries of %d bytes kept, want %d within %d", len(s.Audit), s.auditSize(), kept, MaxAuditBytes)
	}
	b.ReportMetric(float64(kept), "entries-kept")
}
