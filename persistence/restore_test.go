package persistence

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/persistence/snapfile"
	"github.com/berth-cluster/berth/wire"
)

// snapshotState is a state as a snapshot of another cluster holds it:
// apps (one running an executor), a driver, a worker, a queue, a tenant,
// its own masters and audit log, and a lower epoch.
func snapshotState(t *testing.T) *State {
	t.Helper()
	s := NewState()
	ended := t0.Add(time.Minute)
	for _, c := range []Command{
		BumpEpoch(), BumpEpoch(),
		PutWorker(WorkerRecord{ID: "w-old", Host: "10.0.0.9", Port: 7078, Address: "https://10.0.0.9:7078", Cores: 4, MemoryMB: 4096}),
		PutApp(app("app-20261122100000-0001"), 0),
		PutApp(finishedApp("app-20261122100000-0002", ended), 0),
		PutExecutor(ExecutorRecord{AppID: "app-20261122100000-0001", ID: 0, WorkerID: "w-old", Cores: 1, MemoryMB: 64}),
		PutDriver(DriverRecord{ID: "driver-20261122100000-0004", State: wire.DriverSubmitted}, 0),
		PutQueue(QueueRecord{Name: "etl", Weight: 2}),
		PutTenant(TenantRecord{Name: "alpha", Queues: []string{"etl"}, TokenHash: "abc"}),
		PutMaster(MasterRecord{ID: "old-m1", APIAddr: "https://10.0.0.9:7077"}),
		Audit(AuditRecord{Entry: wire.AuditEntry{Time: t0, Route: "POST /v1/apps", Outcome: "ok"}}),
		EndSession(EndedSession{ID: "s-old", Expires: 2000, At: 100}),
	} {
		if err := s.Apply(c, nil); err != nil {
			t.Fatalf("%s: %v", c.Type, err)
		}
	}
	return s
}

// currentState is the cluster the snapshot is restored into: a later
// epoch, higher id numbers, apps and a worker of its own, its masters,
// audit log and signed-out sessions.
func currentState(t *testing.T) *State {
	t.Helper()
	s := NewState()
	for range 7 {
		_ = s.Apply(BumpEpoch(), nil)
	}
	for _, c := range []Command{
		PutWorker(WorkerRecord{ID: "w-new", Host: "10.0.1.1", Port: 7078, Cores: 2}),
		PutApp(app("app-20261123100000-0040"), 0),
		PutExecutor(ExecutorRecord{AppID: "app-20261123100000-0040", ID: 3, WorkerID: "w-new", Cores: 1}),
		PutQueue(QueueRecord{Name: "adhoc", Weight: 1}),
		PutMaster(MasterRecord{ID: "m1", APIAddr: "https://10.0.1.5:7077"}),
		Audit(AuditRecord{Entry: wire.AuditEntry{Time: t0.Add(time.Hour), Route: "PUT /v1/queues/{id}", Outcome: "ok"}}),
		Audit(AuditRecord{Entry: wire.AuditEntry{Time: t0.Add(2 * time.Hour), Route: "DELETE /v1/apps/{id}", Outcome: "ok"}}),
		EndSession(EndedSession{ID: "s-new", Expires: 3000, At: 200}),
	} {
		if err := s.Apply(c, nil); err != nil {
			t.Fatalf("%s: %v", c.Type, err)
		}
	}
	return s
}

// A restore replaces what the cluster runs and holds with the snapshot's,
// and keeps what is the cluster's own: its masters, its audit log, its
// signed-out sessions (merged), and an epoch and id numbers no lower than
// they were. Every record of either side is reported touched.
func TestRestoreReplacesTheStateButNotTheClusters(t *testing.T) {
	snap, cur := snapshotState(t), currentState(t)
	touched := map[Key]bool{}
	if err := cur.Apply(Restore(RestoreRecord{State: snap}), func(k Key) { touched[k] = true }); err != nil {
		t.Fatal(err)
	}
	if err := cur.Validate(); err != nil {
		t.Fatalf("restored state: %v", err)
	}
	for name, got := range map[string][]string{
		"apps": keys(cur.Apps), "drivers": keys(cur.Drivers), "workers": keys(cur.Workers),
		"executors": keys(cur.Executors), "queues": keys(cur.Queues), "tenants": keys(cur.Tenants), "masters": keys(cur.Masters),
	} {
		want := map[string][]string{
			"apps": keys(snap.Apps), "drivers": keys(snap.Drivers), "workers": keys(snap.Workers),
			"executors": keys(snap.Executors), "queues": keys(snap.Queues), "tenants": keys(snap.Tenants), "masters": {"m1"},
		}[name]
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s after the restore: %v, want %v", name, got, want)
		}
	}
	if cur.Epoch != 7 || cur.NextAppNumber != 41 || cur.NextDriverNumber != 5 {
		t.Errorf("epoch %d, next numbers %d %d; want 7, 41, 5", cur.Epoch, cur.NextAppNumber, cur.NextDriverNumber)
	}
	if len(cur.Audit) != 2 || cur.AuditCount != 2 || cur.Audit[1].Route != "DELETE /v1/apps/{id}" {
		t.Errorf("audit log %+v (count %d), want this cluster's two entries", cur.Audit, cur.AuditCount)
	}
	if cur.EndedSessions["s-old"] != 2000 || cur.EndedSessions["s-new"] != 3000 {
		t.Errorf("signed-out sessions %v, want both", cur.EndedSessions)
	}
	for _, k := range []Key{{BucketApps, "app-20261123100000-0040"}, {BucketApps, "app-20261122100000-0001"}, {BucketWorkers, "w-new"},
		{BucketExecutors, "app-20261123100000-0040/3"}, {BucketQueues, "adhoc"}, {BucketTenants, "alpha"}} {
		if !touched[k] {
			t.Errorf("%v not reported touched", k)
		}
	}
	// The restore's own state is not the one the cluster now holds: later
	// changes do not reach back into the command.
	_ = cur.Apply(PutQueue(QueueRecord{Name: "later"}), nil)
	if snap.Queues["later"] != nil {
		t.Error("a change after the restore reached the restored command's state")
	}
	// An old epoch stays old: a snapshot of a later epoch raises it.
	snap.Epoch = 99
	_ = cur.Apply(Restore(RestoreRecord{State: snap}), nil)
	if cur.Epoch != 99 {
		t.Errorf("epoch %d after restoring a snapshot of epoch 99", cur.Epoch)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A restore without a usable state is refused before it is written
// (Check) and when applied, leaving the state as it was.
func TestRestoreOfABadStateIsRefused(t *testing.T) {
	dangling := snapshotState(t)
	dangling.Executors["app-x/1"] = &ExecutorRecord{AppID: "app-x", ID: 1, WorkerID: "w-old"}
	nullRecord := snapshotState(t)
	nullRecord.Apps["app-null"] = nil
	noMaps := &State{}
	for name, c := range map[string]Command{
		"no record":           {Type: TypeRestore},
		"no state":            Restore(RestoreRecord{}),
		"a dangling executor": Restore(RestoreRecord{State: dangling}),
		"a null record":       Restore(RestoreRecord{State: nullRecord}),
		"no maps":             Restore(RestoreRecord{State: noMaps}),
	} {
		if err := c.Check(); err == nil {
			t.Errorf("%s: Check accepted it", name)
		}
		s := currentState(t)
		before := s.Clone()
		if err := s.Apply(c, nil); err == nil || !s.Equal(before) {
			t.Errorf("%s: Apply %v, state changed %v", name, err, !s.Equal(before))
		}
	}
}

// The command goes through the log: encoded, decoded, applied the same.
func TestRestoreCommandRoundTrip(t *testing.T) {
	snap := snapshotState(t)
	data, err := Encode([]Command{Restore(RestoreRecord{State: snap, From: snapfile.Meta{Index: 9, Term: 2}}), BumpEpoch()})
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := Decode(data)
	if err != nil || len(cmds) != 2 || cmds[0].Type != TypeRestore || cmds[0].Restore.From.Index != 9 {
		t.Fatalf("decoded %+v, %v", cmds, err)
	}
	a, b := currentState(t), currentState(t)
	if err := applyAll(a, []Command{Restore(RestoreRecord{State: snap}), BumpEpoch()}, nil); err != nil {
		t.Fatal(err)
	}
	if err := applyAll(b, cmds, nil); err != nil {
		t.Fatal(err)
	}
	if !a.Equal(b) {
		t.Error("the decoded restore applies otherwise than the one written")
	}
}

// Bolt keeps records one by one: a restore rewrites them all, and what
// the restored state does not hold is gone from the file too.
func TestBoltRestoreSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cur := currentState(t)
	var cmds []Command
	for _, w := range cur.Workers {
		cmds = append(cmds, PutWorker(*w))
	}
	for _, a := range cur.Apps {
		cmds = append(cmds, PutApp(*a, 0))
	}
	for _, e := range cur.Executors {
		cmds = append(cmds, PutExecutor(*e))
	}
	cmds = append(cmds, PutQueue(QueueRecord{Name: "adhoc"}), PutMaster(MasterRecord{ID: "m1", APIAddr: "http://127.0.0.1:7077"}))
	if err := b.Write(ctx, cmds); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, []Command{Restore(RestoreRecord{State: snapshotState(t)})}); err != nil {
		t.Fatal(err)
	}
	want, _ := b.Load(ctx)
	b.Close()
	b, err = OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, _ := b.Load(ctx)
	if !got.Equal(want) {
		t.Errorf("after a reopen: %+v\nwant %+v", got, want)
	}
	if got.Workers["w-new"] != nil || got.Queues["adhoc"] != nil || got.Apps["app-20261122100000-0001"] == nil || got.Masters["m1"] == nil {
		t.Errorf("restored file holds workers %v queues %v apps %v masters %v", keys(got.Workers), keys(got.Queues), keys(got.Apps), keys(got.Masters))
	}
}

// A snapshot file holds the state whole and reads back to it; a file whose
// envelope is sound but whose state breaks an invariant is corrupt.
func TestSnapshotFileOfAState(t *testing.T) {
	s := snapshotState(t)
	data, sum, err := EncodeSnapshotFile(s, snapfile.Meta{Index: 5, Term: 1, Version: "v9", Master: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	meta, counts, got, err := DecodeSnapshotFile(bytes.NewReader(data), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(s) || meta.Index != 5 || meta.SHA256 != sum || counts.ActiveApps != 1 || counts.FinishedApps != 1 || counts.Executors != 1 || counts.Epoch != 2 {
		t.Errorf("read back meta %+v counts %+v equal %v", meta, counts, got.Equal(s))
	}
	bad := snapshotState(t)
	bad.Workers["w-other"] = &WorkerRecord{ID: "w-not-this-key"}
	data, _, err = EncodeSnapshotFile(bad, snapfile.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := DecodeSnapshotFile(bytes.NewReader(data), 1<<20); !errors.Is(err, snapfile.ErrCorrupt) || !strings.Contains(err.Error(), "w-not-this-key") {
		t.Errorf("a state with a mis-keyed worker: %v", err)
	}
	if _, _, _, err := DecodeSnapshotFile(bytes.NewReader(data[:len(data)/2]), 1<<20); !errors.Is(err, snapfile.ErrTruncated) {
		t.Errorf("half a file: %v", err)
	}
	// A sound envelope around something that is not a state: refused, not
	// read as an empty state (a forced restore of it would wipe the cluster).
	for _, body := range []string{`null`, `{"bogus":1}`, `[]`} {
		data, _, err := snapfile.Encode(snapfile.Meta{}, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := DecodeSnapshotFile(bytes.NewReader(data), 1<<20); !errors.Is(err, snapfile.ErrCorrupt) {
			t.Errorf("a file whose state is %s: %v, want it refused as corrupt", body, err)
		}
	}
}

// LoadApplied gives the state with the index and term of the last entry it
// holds: the next write's index is the one after it.
func TestRaftLoadAppliedNamesItsIndex(t *testing.T) {
	c := newRaftCluster(t, 1, nil)
	leader := c.leader()
	ctx := context.Background()
	if err := leader.Write(ctx, []Command{PutQueue(QueueRecord{Name: "etl"})}); err != nil {
		t.Fatal(err)
	}
	s, index, term, err := leader.LoadApplied(ctx)
	if err != nil || s.Queues["etl"] == nil || index == 0 || term == 0 {
		t.Fatalf("LoadApplied: %v %d %d %v", s.Queues, index, term, err)
	}
	if err := leader.Write(ctx, []Command{PutQueue(QueueRecord{Name: "adhoc"})}); err != nil {
		t.Fatal(err)
	}
	_, next, _, _ := leader.LoadApplied(ctx)
	if next != index+1 {
		t.Errorf("index %d after the next write, want %d", next, index+1)
	}
}

// A restore through Raft reaches every master.
func TestRaftRestoreReachesEveryMaster(t *testing.T) {
	c := newRaftCluster(t, 3, nil)
	leader := c.leader()
	ctx := context.Background()
	if err := leader.Write(ctx, []Command{PutQueue(QueueRecord{Name: "before"}), PutMaster(MasterRecord{ID: "m1", APIAddr: "x"})}); err != nil {
		t.Fatal(err)
	}
	if err := leader.Write(ctx, []Command{Restore(RestoreRecord{State: snapshotState(t)})}); err != nil {
		t.Fatal(err)
	}
	c.converged(func(s *State) bool {
		return s.Queues["before"] == nil && s.Queues["etl"] != nil && s.Tenants["alpha"] != nil && s.Masters["m1"] != nil && s.Masters["old-m1"] == nil
	})
}
