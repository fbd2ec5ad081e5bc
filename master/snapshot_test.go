package master

import (
	"net/http"
	"slices"
	"testing"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/persistence/snapfile"
	"github.com/berth-cluster/berth/wire"
)

// runningReports is what a worker reports of the executors it runs.
func runningReports(w *workerInfo) []wire.ExecutorReport {
	var out []wire.ExecutorReport
	for _, e := range w.executors {
		out = append(out, wire.ExecutorReport{AppID: e.app.rec.ID, ExecutorID: e.id, Cores: e.cores, MemoryMB: e.memory, State: wire.ExecutorRunning})
	}
	return out
}

func placesOf(ps []wire.ExecutorPlace) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.WorkerID+":"+persistence.ExecutorKey(p.AppID, p.ExecutorID))
	}
	slices.Sort(out)
	return out
}

// A restore says beforehand what it kills; then the state is the
// snapshot's, the leader starts over on it (its commands and streams of
// before dropped), and the workers' reconciliation kills what it does not
// know: an executor of an app that came after the snapshot, on a worker it
// knows, and one on a worker it does not know once that worker registers
// again.
func TestRestoreKillsWhatTheRestoredStateDoesNotKnow(t *testing.T) {
	h := newLeader(t, nil, "w1", "w2")
	before := h.addApp(wire.AppDescription{MaxCores: 2, CoresPerExecutor: 1})
	if len(before.executors) != 2 {
		t.Fatalf("app of before the snapshot: %s", layout(before))
	}
	snap := h.fx.state.Clone() // what save would hold
	w3 := h.addWorker("w3", 4, 4096)
	after := h.addApp(wire.AppDescription{MaxCores: 6, CoresPerExecutor: 1})
	if len(after.executors) != 6 || len(w3.executors) == 0 {
		t.Fatalf("app of after the snapshot: %s", layout(after))
	}
	var afterOnKnown, afterOnW3 []string
	for _, e := range after.executors {
		key := e.worker.rec.ID + ":" + persistence.ExecutorKey(after.rec.ID, e.id)
		if e.worker == w3 {
			afterOnW3 = append(afterOnW3, key)
		} else {
			afterOnKnown = append(afterOnKnown, key)
		}
	}
	slices.Sort(afterOnKnown)
	slices.Sort(afterOnW3)
	reports := map[string][]wire.ExecutorReport{}
	for _, w := range h.c.workers {
		reports[w.rec.ID] = runningReports(w)
	}

	plan := h.c.restorePlan(snap, wire.SnapshotInfo{Index: 7})
	want := append(slices.Clone(afterOnKnown), afterOnW3...)
	slices.Sort(want)
	if got := placesOf(plan.KillExecutors); !slices.Equal(got, want) {
		t.Errorf("plan kills %v, want %v", got, want)
	}
	if len(plan.LostExecutors) != 0 || !slices.Equal(plan.GoneApps, []string{after.rec.ID}) || plan.Restored || plan.Snapshot.Index != 7 {
		t.Errorf("plan %+v", plan)
	}

	gen, dropped := h.c.gen, h.fx.dropped
	var got wire.Restore
	var gotErr error
	replied := false
	h.c.restoreState(snap, snapfile.Meta{Index: 7}, plan.Snapshot, func(r wire.Restore, err error) { got, gotErr, replied = r, err, true })
	if replied || h.c.leading() || h.c.gen != gen+1 || h.fx.dropped != dropped+1 {
		t.Fatalf("before the restore commits: replied %v, leading %v, gen %d (was %d), dropped %d", replied, h.c.leading(), h.c.gen, gen, h.fx.dropped)
	}
	h.commit()
	if !replied || gotErr != nil || !got.Restored || len(got.KillExecutors) != len(want) {
		t.Fatalf("restore answered %+v, %v (replied %v)", got, gotErr, replied)
	}
	if !slices.Contains(h.fx.prepared, h.c.gen) {
		t.Errorf("the leadership was not prepared again (prepared %v, gen %d)", h.fx.prepared, h.c.gen)
	}
	if h.fx.state.Apps[after.rec.ID] != nil || h.fx.state.Apps[before.rec.ID] == nil || h.fx.state.Workers["w3"] != nil {
		t.Fatalf("the durable state after the restore: apps %v workers %v", keysOf(h.fx.state.Apps), keysOf(h.fx.state.Workers))
	}

	// The leader prepares as a new one does, on the restored state.
	s := h.fx.state.Clone()
	s.Epoch++
	h.takeSent(wire.WorkerAPI.Reconnect.Pattern)
	h.c.leadershipReady(h.c.gen, s, nil)
	h.commit()
	var told []string
	for _, sc := range h.takeSent(wire.WorkerAPI.Reconnect.Pattern) {
		told = append(told, sc.worker)
	}
	slices.Sort(told)
	if !slices.Equal(told, []string{"w1", "w2"}) {
		t.Errorf("reconnect sent to %v, want the workers the snapshot knows", told)
	}

	// Workers it knows answer with what they run: the executors of after
	// are killed, before's kept.
	var killed []string
	for _, id := range []string{"w1", "w2"} {
		reply, err := h.c.workerLatestState(id, wire.WorkerLatestState{WorkerID: id, Executors: reports[id]})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range reply.KilledExecutors {
			killed = append(killed, id+":"+persistence.ExecutorKey(k.AppID, k.ExecutorID))
		}
	}
	h.commit()
	slices.Sort(killed)
	if !slices.Equal(killed, afterOnKnown) {
		t.Errorf("killed on the known workers %v, want %v", killed, afterOnKnown)
	}
	if a := h.c.apps[before.rec.ID]; a == nil || len(a.executors) != 2 {
		t.Errorf("the app of before the snapshot after reconciliation: %+v", a)
	}

	// w3, unknown to the snapshot, is asked to register again, and then
	// told to kill what it runs.
	if hb, err := h.c.heartbeat("w3", wire.Heartbeat{}); err != nil || !hb.Reconnect {
		t.Fatalf("w3's heartbeat: %+v %v", hb, err)
	}
	if err := h.reregister(w3, "w3-1"); err != nil {
		t.Fatal(err)
	}
	reply, err := h.c.workerLatestState("w3", wire.WorkerLatestState{WorkerID: "w3", Executors: reports["w3"]})
	if err != nil {
		t.Fatal(err)
	}
	killed = nil
	for _, k := range reply.KilledExecutors {
		killed = append(killed, "w3:"+persistence.ExecutorKey(k.AppID, k.ExecutorID))
	}
	slices.Sort(killed)
	slices.Sort(afterOnW3)
	if !slices.Equal(killed, afterOnW3) {
		t.Errorf("killed on w3 %v, want %v", killed, afterOnW3)
	}
	kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	if len(kills) != len(afterOnKnown)+len(afterOnW3) {
		t.Errorf("kill commands sent: %d, want %d", len(kills), len(afterOnKnown)+len(afterOnW3))
	}
	for _, k := range kills {
		if k.cmd.body.(wire.KillExecutor).Epoch != h.c.epoch {
			t.Errorf("a kill of epoch %d, the leader's is %d", k.cmd.body.(wire.KillExecutor).Epoch, h.c.epoch)
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A restore whose write fails answers an error, and the leader still
// starts over on the state as it is; a follower refuses.
func TestRestoreFailedOrRefused(t *testing.T) {
	h := newLeader(t, nil, "w1")
	h.addApp(wire.AppDescription{MaxCores: 1})
	snap := persistence.NewState()
	var gotErr error
	h.c.restoreState(snap, snapfile.Meta{}, wire.SnapshotInfo{}, func(_ wire.Restore, err error) { gotErr = err })
	h.failWrites(persistence.ErrNotLeader)
	if statusOf(gotErr) != http.StatusServiceUnavailable || !slices.Contains(h.fx.prepared, h.c.gen) {
		t.Errorf("a failed restore: %v, prepared %v (gen %d)", gotErr, h.fx.prepared, h.c.gen)
	}
	if len(h.fx.state.Apps) != 1 {
		t.Errorf("apps after a failed restore: %v", keysOf(h.fx.state.Apps))
	}
	h.c.revoked()
	h.fx.leader = "http://10.0.0.2:7077"
	h.c.restoreState(snap, snapfile.Meta{}, wire.SnapshotInfo{}, func(_ wire.Restore, err error) { gotErr = err })
	if statusOf(gotErr) != http.StatusTemporaryRedirect || len(h.fx.pending) != 0 {
		t.Errorf("a restore on a follower: %v, writes %d", gotErr, len(h.fx.pending))
	}
}
