package e2e

// High availability (see ha_failover_test.go): workers that die with the
// leader, and what the new leader's recovery does about them.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestHAWorkerKilledDuringRecovery pins recovery with a worker that died
// with the leader: the new leader waits for it (UNKNOWN, leader not ready)
// until --recovery-timeout and not less, then removes it (DEAD); the other
// worker's executor lives on, same process, and the app gets its lost core
// back on the surviving worker.
func TestHAWorkerKilledDuringRecovery(t *testing.T) {
	t.Parallel()
	const recovery = 4 * time.Second
	// A worker timeout far above the recovery timeout: only recovery can
	// remove the dead worker within this test.
	hc := haCluster(t, 3, []string{"--worker-timeout", "60s", "--recovery-timeout", recovery.String()}, "w1", "w2")
	appID, stream, before := hc.runLongApp("ha-recovery", 2)
	var onW1, onW2 []int
	for id, e := range executorsByID(before, appID, wire.ExecutorRunning) {
		if e.WorkerID == "w1" {
			onW1 = append(onW1, id)
		} else {
			onW2 = append(onW2, id)
		}
	}
	if len(onW1) != 1 || len(onW2) != 1 {
		t.Fatalf("executors on w1 %v, on w2 %v; want one on each (spread)", onW1, onW2)
	}
	pids := hc.execPids()
	old := hc.master(before.MasterID)

	killedAt := time.Now()
	old.Proc().Kill()
	hc.worker("w2").Kill()

	// Watch the new leader from its first answer as leader (recovery has
	// begun by then) until it is ALIVE.
	var newLeader *testcluster.Master
	var firstSeen, aliveAt time.Time
	var recovering wire.ClusterStatus
	complained := false
	complain := func(format string, args ...any) { // once, not at every poll
		if !complained {
			complained = true
			t.Errorf(format, args...)
		}
	}
	testproc.Eventually(t, recovery+15*time.Second, "the new leader ALIVE", func() error {
		for _, m := range hc.others(old) {
			st, err := hc.view(m)
			if err != nil || st.View != wire.ViewLeader {
				continue
			}
			if newLeader == nil {
				newLeader, firstSeen = m, time.Now()
			}
			if st.Status == wire.MasterAlive {
				aliveAt = time.Now()
				return nil
			}
			recovering = st
			// Waiting for w2: it is UNKNOWN, not yet removed, and the
			// leader is not ready.
			if w, ok := workerIn(st, "w2"); !ok || w.State != wire.WorkerUnknown {
				complain("w2 while %s recovers (%s after the kill): %+v (listed %v), want UNKNOWN", m.ID, time.Since(killedAt), w, ok)
			}
			if code, body := readyz(m.URL); code != http.StatusServiceUnavailable {
				// Unless recovery ended between the two calls.
				if s2, err := hc.view(m); err == nil && s2.Status != wire.MasterAlive {
					complain("/readyz on the recovering leader: %d %s, want 503", code, body)
				}
			}
			return fmt.Errorf("%s is %s", m.ID, st.Status)
		}
		return fmt.Errorf("no leader yet")
	})
	if recovering.MasterID == "" {
		t.Fatalf("never saw %s RECOVERING: it cannot have waited for w2", newLeader.ID)
	}
	t.Logf("new leader %s: seen leading %s after the kill, ALIVE %s after the kill (%s after first seen; recovery timeout %s)",
		newLeader.ID, firstSeen.Sub(killedAt).Round(time.Millisecond), aliveAt.Sub(killedAt).Round(time.Millisecond),
		aliveAt.Sub(firstSeen).Round(time.Millisecond), recovery)
	// Recovery started after the kill and no sooner than firstSeen minus
	// the poll's lag; it must last the whole timeout.
	if waited := aliveAt.Sub(killedAt); waited < recovery {
		t.Errorf("recovery ended %s after the kill, before the %s recovery timeout", waited, recovery)
	}
	if waited := aliveAt.Sub(firstSeen); waited < recovery-500*time.Millisecond || waited > recovery+3*time.Second {
		t.Errorf("recovery ended %s after the new leader was first seen leading, want ≈ %s", waited, recovery)
	}

	st := hc.runningApp(appID, 2, 15*time.Second) // the lost core is placed again
	if w, ok := workerIn(st, "w2"); !ok || w.State != wire.WorkerDead {
		t.Errorf("w2 after recovery: %+v (listed %v), want DEAD", w, ok)
	}
	if w, ok := workerIn(st, "w1"); !ok || w.State != wire.WorkerAlive {
		t.Errorf("w1 after recovery: %+v (listed %v), want ALIVE", w, ok)
	}
	running := executorsByID(st, appID, wire.ExecutorRunning)
	if e, ok := running[onW1[0]]; !ok || e.WorkerID != "w1" {
		t.Errorf("w1's executor %d after recovery: %+v", onW1[0], e)
	}
	if _, ok := running[onW2[0]]; ok {
		t.Errorf("w2's executor %d is RUNNING after w2 was removed", onW2[0])
	}
	for id, e := range running {
		if e.WorkerID != "w1" {
			t.Errorf("executor %d RUNNING on %s, want only w1 alive", id, e.WorkerID)
		}
	}
	k1 := execKey(appID, onW1[0])
	if got := hc.execPids()[k1]; got != pids[k1] {
		t.Errorf("w1's executor process: pid %d, was %d", got, pids[k1])
	}
	// The app's stream, after the failover, gets snapshots that no longer
	// list w2's executor as running, so the client can drop it.
	testproc.Eventually(t, 5*time.Second, "a snapshot without w2's executor after the failover", func() error {
		for _, ev := range stream.of(wire.EventSnapshot) {
			if ev.at.Before(killedAt) || ev.App == nil {
				continue
			}
			ok := true
			for _, e := range ev.App.Executors {
				if e.ID == onW2[0] && !e.State.Finished() {
					ok = false
				}
			}
			if ok {
				return nil
			}
		}
		return fmt.Errorf("events %s", stream.types())
	})
}

// TestHASilentWorkerExecutorsReportedLost pins what happens to a worker
// that dies together with the leader: executor placements are durable, so
// the new leader knows what the worker ran; at the recovery timeout the
// worker is DEAD, its executor LOST in the leader's view, and the app's
// stream gets executorLost for it.
func TestHASilentWorkerExecutorsReportedLost(t *testing.T) {
	t.Parallel()
	hc := startCluster(t, clusterSpec{masters: 3, flags: []string{"--worker-timeout", "60s", "--recovery-timeout", "2s"},
		workers: []string{"w1"}, cores: 1, memory: "1g"})
	appID, stream, before := hc.runLongApp("ha-silent-worker", 1)
	var execID int
	for id := range executorsByID(before, appID, wire.ExecutorRunning) {
		execID = id
	}
	old := hc.master(before.MasterID)
	old.Proc().Kill()
	hc.worker("w1").Kill()
	_, st := hc.leader(20*time.Second, old)
	if ww, ok := workerIn(st, "w1"); !ok || ww.State != wire.WorkerDead {
		t.Errorf("w1 after recovery: %+v (listed %v), want DEAD", ww, ok)
	}
	testproc.Eventually(t, 5*time.Second, fmt.Sprintf("executor %d of the silent worker reported LOST", execID), func() error {
		var problems []string
		if e, ok := executorsByID(st, appID, wire.ExecutorLost)[execID]; !ok {
			a, _ := appStatus(st, appID)
			problems = append(problems, fmt.Sprintf("not LOST in the new leader's view (executors there: %+v)", a.Executors))
		} else if e.WorkerID != "w1" {
			problems = append(problems, fmt.Sprintf("LOST on %s", e.WorkerID))
		}
		found := false
		for _, ev := range stream.of(wire.EventExecutorLost) {
			found = found || (ev.Executor != nil && ev.Executor.ID == execID)
		}
		if !found {
			problems = append(problems, "no executorLost on the app's stream (events: "+stream.types()+")")
		}
		if len(problems) > 0 {
			st, _ = hc.status()
			return fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		return nil
	})
}
