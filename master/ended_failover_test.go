package master

import (
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// endedOf is what an app's status lists of its ended executors.
func endedOf(a *appInfo) []wire.ExecutorStatus {
	var out []wire.ExecutorStatus
	for _, st := range appStatus(a).Executors {
		if st.State.Finished() {
			out = append(out, st)
		}
	}
	return out
}

// A new leader lists an active app's ended executors as the leader before
// did: the one that failed on its own, the one its app killed, the one
// lost with its worker, each with its worker, state, reason and exit code.
// Their logs stay reachable, and the app's final record, written by the
// new leader, lists them. Before, they were in the old leader's memory
// only: a finished app's executor list lacked every executor that ended
// before a failover (e2e/spark's TestSparkPreemption saw it).
func TestEndedExecutorsSurviveFailover(t *testing.T) {
	old := newLeader(t, nil, "w1", "w2", "w3")
	a := old.addApp(wire.AppDescription{Name: "job", CoresPerExecutor: 1, MaxCores: 6})
	byWorker := map[string][]*executorInfo{}
	for _, e := range sortedExecutors(a.executors) {
		byWorker[e.worker.rec.ID] = append(byWorker[e.worker.rec.ID], e)
	}
	if len(byWorker["w1"]) < 2 || len(byWorker["w2"]) < 1 {
		t.Fatalf("setup: layout %v", layout(a))
	}
	failed, killed := byWorker["w1"][0], byWorker["w1"][1]
	old.report(failed, wire.ExecutorFailed, intp(3))
	if _, err := run(old, func(reply reply[wire.KillExecutors]) { old.c.killExecutors(a.rec.ID, []int{killed.id}, reply) }); err != nil {
		t.Fatal(err)
	}
	old.c.removeWorker(old.c.workers["w2"], "shut down", nil)
	old.commit()
	want := endedOf(a)
	if len(want) < 3 {
		t.Fatalf("setup: the old leader lists %d ended executors: %+v", len(want), want)
	}
	states := map[wire.ExecutorState]bool{}
	for _, st := range want {
		states[st.State] = true
	}
	if !states[wire.ExecutorFailed] || !states[wire.ExecutorKilled] || !states[wire.ExecutorLost] {
		t.Fatalf("setup: ended states %v", states)
	}

	h := successor(t, old, nil)
	got := endedOf(h.c.apps[a.rec.ID])
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the new leader lists the ended executors\n %+v\nthe old one listed\n %+v", got, want)
	}
	if addr, err := h.c.executorWorkerAddress(a.rec.ID, failed.id); err != nil || addr != old.c.workers["w1"].rec.Address {
		t.Errorf("logs of the failed executor after the failover: %q %v", addr, err)
	}
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", reply) }); err != nil {
		t.Fatal(err)
	}
	final := map[int]wire.ExecutorState{}
	for _, st := range h.fx.state.Apps[a.rec.ID].Executors {
		final[st.ID] = st.State
	}
	for _, st := range want {
		if final[st.ID] != st.State {
			t.Errorf("the final record lists executor %d as %q, want %s", st.ID, final[st.ID], st.State)
		}
	}
	if h.fx.state.EndedExecutors[a.rec.ID] != nil {
		t.Error("the app's ended executors kept beside its final record")
	}
}

// A follower finds the worker of an executor's log in its replica: a live
// one, one that ended while its app runs (kept for it), one of a finished
// app (its final record); anything else is the leader's to answer.
func TestReplicaFindsEndedExecutorsWorkers(t *testing.T) {
	st := persistence.NewState()
	for _, id := range []string{"w1", "w2", "w3"} {
		st.Workers[id] = &persistence.WorkerRecord{ID: id, Address: "https://" + id + ":7078"}
	}
	st.Apps["a"] = &persistence.AppRecord{ID: "a", State: wire.AppRunning}
	st.Apps["done"] = &persistence.AppRecord{ID: "done", State: wire.AppFinished, Executors: []wire.ExecutorStatus{{ID: 4, WorkerID: "w3"}}}
	st.Executors[persistence.ExecutorKey("a", 2)] = &persistence.ExecutorRecord{AppID: "a", ID: 2, WorkerID: "w1"}
	st.EndedExecutors["a"] = &persistence.EndedExecutorsRecord{AppID: "a", Executors: []wire.ExecutorStatus{{ID: 0, WorkerID: "w2"}}}
	find := replicaExecutorWorker(st)
	for _, c := range []struct {
		app  string
		id   int
		want string
	}{{"a", 2, "https://w1:7078"}, {"a", 0, "https://w2:7078"}, {"done", 4, "https://w3:7078"}} {
		if got, err := find(c.app, c.id); err != nil || got != c.want {
			t.Errorf("executor %s/%d: %q %v, want %s", c.app, c.id, got, err, c.want)
		}
	}
	if _, err := find("a", 9); err != errNotInReplica {
		t.Errorf("an executor the replica does not hold: %v", err)
	}
}

// An app ended while an executor's own end is being written: its final
// record lists that executor as it ended (FAILED, its exit code), not as
// killed by the app's end, and the master lists what the record does, as
// a later leader will.
func TestFinalRecordKeepsAnEndInFlight(t *testing.T) {
	h := newLeader(t, nil, "w1")
	a := h.addApp(wire.AppDescription{Name: "job", CoresPerExecutor: 1, MaxCores: 2})
	execs := sortedExecutors(a.executors)
	if len(execs) != 2 {
		t.Fatalf("setup: layout %v", layout(a))
	}
	failed := execs[0]
	h.c.executorStateChanged("w1", wire.ExecutorStateChanged{AppID: a.rec.ID, ExecutorID: failed.id, State: wire.ExecutorFailed, ExitCode: intp(3)}, func(wire.None, error) {})
	var ended error
	h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", func(_ wire.AppStatus, err error) { ended = err })
	h.commit()
	if ended != nil {
		t.Fatal(ended)
	}
	record := h.fx.state.Apps[a.rec.ID].Executors
	byID := map[int]wire.ExecutorStatus{}
	for _, st := range record {
		byID[st.ID] = st
	}
	if st := byID[failed.id]; st.State != wire.ExecutorFailed || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Errorf("the final record lists executor %d as %+v, want FAILED with code 3", failed.id, st)
	}
	if st := byID[execs[1].id]; st.State != wire.ExecutorKilled {
		t.Errorf("the final record lists executor %d as %+v, want KILLED with its app", execs[1].id, st)
	}
	shown, err := h.c.app(a.rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(shown.Executors, record) {
		t.Errorf("the master lists\n %+v\nits final record\n %+v", shown.Executors, record)
	}
}
