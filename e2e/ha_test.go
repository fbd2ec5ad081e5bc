package e2e

// End-to-end tests of high availability: three masters replicating through
// Raft on 127.0.0.1, .2 and .3, real workers and executor processes, real
// signals (kill -9, SIGTERM, SIGSTOP/SIGCONT). Each test has its own cluster
// on its own ports, so they run in parallel.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/wire"
)

// haFailoverBound is how long a failover (the old leader gone → a new
// leader ALIVE, every worker and app back) may take with Raft's default
// timing (--raft-multiplier 1).
const haFailoverBound = 10 * time.Second

func haCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestHALeaderKilledFailover pins failover after a kill -9 of the leader:
// another master leads (ALIVE) within seconds at a higher epoch; the workers
// re-register with it; the running app's executors are untouched (same
// processes, same ids RUNNING, no executorLost); the app's stream is told
// the master changed; new apps are accepted and get executors.
func TestHALeaderKilledFailover(t *testing.T) {
	t.Parallel()
	// A long recovery timeout: ALIVE within the bound can only mean that
	// every worker and the app answered the new leader.
	hc := haStartCluster(t, 3, "--worker-timeout", "10s", "--recovery-timeout", "30s")
	startWorker(t, hc.urls(), 2, "1g", "--id", "w1")
	startWorker(t, hc.urls(), 2, "1g", "--id", "w2")
	hc.waitWorkers("w1", "w2")
	c := newClient(t, hc.urls()...)
	const key = "ha-failover-registration"
	appID, err := c.RegisterApp(haCtx(t, 30*time.Second), hc.app("ha-failover", 2), client.WithIdempotencyKey(key))
	if err != nil {
		t.Fatal(err)
	}
	stream := haFollow(t, c, appID)
	before := hc.runningApp(appID, 2, 20*time.Second)
	execs := haExecutors(before, appID, wire.ExecutorRunning)
	pids := hc.execPids()
	if len(pids) != 2 {
		t.Fatalf("executor processes %v, want 2", pids)
	}
	old := hc.byID(before.MasterID)

	killedAt := time.Now()
	old.kill()
	newLeader, st := hc.leader(haFailoverBound+10*time.Second, hc.others(old))
	took := time.Since(killedAt)
	t.Logf("failover after kill -9 of %s: %s ALIVE in %s (epoch %d → %d)", old.id, newLeader.id, took.Round(time.Millisecond), before.Epoch, st.Epoch)
	if took > haFailoverBound {
		t.Errorf("new leader ALIVE %s after the kill, want < %s", took, haFailoverBound)
	}
	if st.MasterID == old.id || st.LeaderID != newLeader.id {
		t.Errorf("new leader's view: masterId %q leaderId %q; want %q (not the killed %q)", st.MasterID, st.LeaderID, newLeader.id, old.id)
	}
	if st.Epoch <= before.Epoch {
		t.Errorf("epoch %d after the failover, want > %d", st.Epoch, before.Epoch)
	}
	for _, id := range []string{"w1", "w2"} {
		if w, ok := haWorkerIn(st, id); !ok || w.State != wire.WorkerAlive {
			t.Errorf("worker %s in the new leader's view: %+v (listed %v), want ALIVE", id, w, ok)
		}
	}
	after := haExecutors(st, appID, wire.ExecutorRunning)
	if len(after) != len(execs) {
		t.Errorf("RUNNING executors after the failover %+v, before %+v", after, execs)
	}
	for id, e := range execs {
		if a, ok := after[id]; !ok || a.WorkerID != e.WorkerID {
			t.Errorf("executor %d (on %s) after the failover: %+v", id, e.WorkerID, a)
		}
	}
	if got := hc.execPids(); !haMapsEqual(got, pids) {
		t.Errorf("executor processes after the failover %v, before %v", got, pids)
	}
	eventually(t, 5*time.Second, "masterChanged on the app's stream", func() error {
		for _, ev := range stream.of(wire.EventMasterChanged) {
			if ev.Epoch == st.Epoch && ev.Leader == newLeader.url {
				return nil
			}
		}
		return fmt.Errorf("events %s", stream.types())
	})
	if lost := stream.of(wire.EventExecutorLost); len(lost) > 0 {
		t.Errorf("the app was told executors were lost: %+v", lost)
	}
	if ended, err := stream.ended(); ended {
		t.Errorf("the app's event stream gave up: %v", err)
	}

	// A client that never heard the answer and repeats the registration
	// under its key gets the same app from the new leader, not a second one.
	c2 := newClient(t, hc.urls()...)
	again, err := c2.RegisterApp(haCtx(t, 30*time.Second), hc.app("ha-failover", 2), client.WithIdempotencyKey(key))
	if err != nil || again != appID {
		t.Errorf("registration repeated under its key after the failover: %q, %v; want %s", again, err, appID)
	}

	// New work goes through a client that knows nothing of the failover.
	app2, err := c2.RegisterApp(haCtx(t, 30*time.Second), hc.app("ha-after-failover", 2))
	if err != nil {
		t.Fatalf("registering an app after the failover: %v", err)
	}
	haFollow(t, c2, app2)
	hc.runningApp(app2, 2, 15*time.Second)
	got := hc.execPids()
	for k, pid := range pids {
		if got[k] != pid {
			t.Errorf("executor %s: pid %d, was %d", k, got[k], pid)
		}
	}
	if lost := stream.of(wire.EventExecutorLost); len(lost) > 0 {
		t.Errorf("the app was told executors were lost: %+v", lost)
	}
}

// TestHAQuorumLostAndRestored pins what a master without a quorum does: it
// refuses writes with a 503 that says there is no leader, still answers
// reads from its replica (follower view, the records there), and once the
// two dead masters restart on their data a leader is back with the state
// intact (same app and driver ids).
func TestHAQuorumLostAndRestored(t *testing.T) {
	t.Parallel()
	hc := haStartCluster(t, 3, "--worker-timeout", "10s", "--recovery-timeout", "30s")
	c := newClient(t, hc.urls()...)
	ctx := haCtx(t, time.Minute)
	var apps, drivers []string
	for i := range 2 {
		id, err := c.RegisterApp(ctx, hc.app(fmt.Sprintf("ha-quorum-%d", i), 1))
		if err != nil {
			t.Fatal(err)
		}
		haFollow(t, c, id) // the app's lease, across the outage
		apps = append(apps, id)
	}
	// No worker: the driver waits, SUBMITTED.
	did, err := c.SubmitDriver(ctx, wire.DriverDescription{Command: hc.execCommand(), Cores: 1, MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	drivers = append(drivers, did)
	slices.Sort(apps)

	leader, st := hc.leader(10*time.Second, nil)
	epoch := st.Epoch
	rest := hc.others(leader)
	survivor, other := rest[0], rest[1]
	// The survivor has the records before the others go.
	eventually(t, 10*time.Second, "the survivor's replica has the apps and the driver", func() error {
		s, err := haCluster1(survivor.url)
		if err != nil {
			return err
		}
		if !haContainsAll(haAppIDs(s), apps) || !haContainsAll(haDriverIDs(s), drivers) {
			return fmt.Errorf("apps %v drivers %v", haAppIDs(s), haDriverIDs(s))
		}
		return nil
	})

	leader.kill()
	other.kill()
	t.Logf("killed %s (leader) and %s; %s survives", leader.id, other.id, survivor.id)

	// Writes: refused, saying why.
	body := wire.AppDescription{Name: "ha-no-quorum", Command: []string{"true"}}
	var lastStatus int
	var lastBody string
	eventually(t, 15*time.Second, "POST /v1/apps on the survivor refused with 503 no leader", func() error {
		status, b, err := haDo(http.MethodPost, survivor.url+"/v1/apps", body)
		if err != nil {
			return err
		}
		lastStatus, lastBody = status, string(b)
		var e wire.Error
		json.Unmarshal(b, &e)
		if status != http.StatusServiceUnavailable || !strings.Contains(e.Error, "no leader") || !strings.Contains(e.Error, "quorum") {
			return fmt.Errorf("%d %s", status, b)
		}
		return nil
	})
	t.Logf("write without a quorum: %d %s", lastStatus, strings.TrimSpace(lastBody))
	// The typed client gives up with that status too, creating nothing.
	short, err := client.New([]string{survivor.url}, secret, client.WithRetryBudget(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.RegisterApp(haCtx(t, 10*time.Second), body); client.StatusCode(err) != http.StatusServiceUnavailable {
		t.Errorf("RegisterApp without a quorum: %v (status %d), want a 503", err, client.StatusCode(err))
	}
	// Reads: answered from the replica.
	s, err := haCluster1(survivor.url)
	if err != nil {
		t.Fatalf("GET /v1/cluster on the survivor without a quorum: %v", err)
	}
	if s.View != wire.ViewFollower || s.MasterID != survivor.id || s.LeaderID != "" {
		t.Errorf("survivor's view: view %q master %q leader %q, want a follower naming no leader", s.View, s.MasterID, s.LeaderID)
	}
	if !haContainsAll(haAppIDs(s), apps) || !haContainsAll(haDriverIDs(s), drivers) {
		t.Errorf("survivor's view lists apps %v drivers %v; want %v and %v", haAppIDs(s), haDriverIDs(s), apps, drivers)
	}
	if code, b := haReadyz(survivor.url); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz on the survivor: %d %s, want 503", code, b)
	}

	// Back to three: a leader again, nothing lost.
	restartedAt := time.Now()
	leader.restart(t)
	other.restart(t)
	newLeader, st2 := hc.leader(30*time.Second, nil)
	t.Logf("after restarting %s and %s: %s ALIVE in %s", leader.id, other.id, newLeader.id, time.Since(restartedAt).Round(time.Millisecond))
	if st2.Epoch <= epoch {
		t.Errorf("epoch %d after the restart, want > %d", st2.Epoch, epoch)
	}
	for _, id := range apps {
		a, ok := appStatus(st2, id)
		if !ok || a.State.Finished() {
			t.Errorf("app %s after the restart: %+v (listed %v), want active", id, a, ok)
		}
	}
	if got := haDriverIDs(st2); !haContainsAll(got, drivers) {
		t.Errorf("drivers after the restart %v, want %v", got, drivers)
	}
	for _, d := range st2.ActiveDrivers {
		if d.ID == did && d.State != wire.DriverSubmitted {
			t.Errorf("driver %s: %s, want SUBMITTED", did, d.State)
		}
	}
	// And it takes writes.
	if _, err := c.RegisterApp(haCtx(t, 20*time.Second), wire.AppDescription{Name: "ha-quorum-back", Command: []string{"true"}}); err != nil {
		t.Errorf("registering an app once the quorum is back: %v", err)
	}
}

func haContainsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

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
	hc := haStartCluster(t, 3, "--worker-timeout", "60s", "--recovery-timeout", recovery.String())
	startWorker(t, hc.urls(), 2, "1g", "--id", "w1")
	w2 := startWorker(t, hc.urls(), 2, "1g", "--id", "w2")
	hc.waitWorkers("w1", "w2")
	c := newClient(t, hc.urls()...)
	appID, err := c.RegisterApp(haCtx(t, 30*time.Second), hc.app("ha-recovery", 2))
	if err != nil {
		t.Fatal(err)
	}
	stream := haFollow(t, c, appID)
	before := hc.runningApp(appID, 2, 20*time.Second)
	var onW1, onW2 []int
	for id, e := range haExecutors(before, appID, wire.ExecutorRunning) {
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
	old := hc.byID(before.MasterID)

	killedAt := time.Now()
	old.kill()
	w2.kill()

	// Watch the new leader from its first answer as leader (recovery has
	// begun by then) until it is ALIVE.
	var newLeader *masterProc
	var firstSeen, aliveAt time.Time
	var recovering wire.ClusterStatus
	complained := false
	complain := func(format string, args ...any) { // once, not at every poll
		if !complained {
			complained = true
			t.Errorf(format, args...)
		}
	}
	eventually(t, recovery+15*time.Second, "the new leader ALIVE", func() error {
		for _, m := range hc.others(old) {
			st, err := haCluster1(m.url)
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
			if w, ok := haWorkerIn(st, "w2"); !ok || w.State != wire.WorkerUnknown {
				complain("w2 while %s recovers (%s after the kill): %+v (listed %v), want UNKNOWN", m.id, time.Since(killedAt), w, ok)
			}
			if code, body := haReadyz(m.url); code != http.StatusServiceUnavailable {
				// Unless recovery ended between the two calls.
				if s2, err := haCluster1(m.url); err == nil && s2.Status != wire.MasterAlive {
					complain("/readyz on the recovering leader: %d %s, want 503", code, body)
				}
			}
			return fmt.Errorf("%s is %s", m.id, st.Status)
		}
		return fmt.Errorf("no leader yet")
	})
	if recovering.MasterID == "" {
		t.Fatalf("never saw %s RECOVERING: it cannot have waited for w2", newLeader.id)
	}
	t.Logf("new leader %s: seen leading %s after the kill, ALIVE %s after the kill (%s after first seen; recovery timeout %s)",
		newLeader.id, firstSeen.Sub(killedAt).Round(time.Millisecond), aliveAt.Sub(killedAt).Round(time.Millisecond),
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
	if w, ok := haWorkerIn(st, "w2"); !ok || w.State != wire.WorkerDead {
		t.Errorf("w2 after recovery: %+v (listed %v), want DEAD", w, ok)
	}
	if w, ok := haWorkerIn(st, "w1"); !ok || w.State != wire.WorkerAlive {
		t.Errorf("w1 after recovery: %+v (listed %v), want ALIVE", w, ok)
	}
	running := haExecutors(st, appID, wire.ExecutorRunning)
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
	k1 := haExecKey(appID, onW1[0])
	if got := hc.execPids()[k1]; got != pids[k1] {
		t.Errorf("w1's executor process: pid %d, was %d", got, pids[k1])
	}
	// The app's stream, after the failover, gets snapshots that no longer
	// list w2's executor as running, so the client can drop it.
	eventually(t, 5*time.Second, "a snapshot without w2's executor after the failover", func() error {
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
	hc := haStartCluster(t, 3, "--worker-timeout", "60s", "--recovery-timeout", "2s")
	w := startWorker(t, hc.urls(), 1, "1g", "--id", "w1")
	hc.waitWorkers("w1")
	c := newClient(t, hc.urls()...)
	appID, err := c.RegisterApp(haCtx(t, 30*time.Second), hc.app("ha-silent-worker", 1))
	if err != nil {
		t.Fatal(err)
	}
	stream := haFollow(t, c, appID)
	before := hc.runningApp(appID, 1, 20*time.Second)
	var execID int
	for id := range haExecutors(before, appID, wire.ExecutorRunning) {
		execID = id
	}
	old := hc.byID(before.MasterID)
	old.kill()
	w.kill()
	_, st := hc.leader(20*time.Second, hc.others(old))
	if ww, ok := haWorkerIn(st, "w1"); !ok || ww.State != wire.WorkerDead {
		t.Errorf("w1 after recovery: %+v (listed %v), want DEAD", ww, ok)
	}
	eventually(t, 5*time.Second, fmt.Sprintf("executor %d of the silent worker reported LOST", execID), func() error {
		var problems []string
		if e, ok := haExecutors(st, appID, wire.ExecutorLost)[execID]; !ok {
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
			_, st, _ = hc.findLeader()
			return fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		return nil
	})
}

// TestHALeaderSIGTERMTransfersLeadership pins a graceful stop of the
// leader: it hands leadership over (and says so in its log), exits 0 by
// itself, another master is ALIVE shortly, and the executors are untouched.
func TestHALeaderSIGTERMTransfersLeadership(t *testing.T) {
	t.Parallel()
	hc := haStartCluster(t, 3, "--worker-timeout", "10s", "--recovery-timeout", "30s")
	startWorker(t, hc.urls(), 2, "1g", "--id", "w1")
	startWorker(t, hc.urls(), 2, "1g", "--id", "w2")
	hc.waitWorkers("w1", "w2")
	c := newClient(t, hc.urls()...)
	appID, err := c.RegisterApp(haCtx(t, 30*time.Second), hc.app("ha-sigterm", 2))
	if err != nil {
		t.Fatal(err)
	}
	stream := haFollow(t, c, appID)
	before := hc.runningApp(appID, 2, 20*time.Second)
	pids := hc.execPids()
	old := hc.byID(before.MasterID)

	stoppedAt := time.Now()
	if err := old.stop(15 * time.Second); err != nil {
		t.Errorf("the leader's exit after SIGTERM: %v, want status 0", err)
	}
	exited := time.Since(stoppedAt)
	newLeader, st := hc.leader(haFailoverBound+10*time.Second, hc.others(old))
	took := time.Since(stoppedAt)
	t.Logf("SIGTERM to %s: exited in %s; %s ALIVE %s after the signal (epoch %d → %d)", old.id, exited.Round(time.Millisecond), newLeader.id, took.Round(time.Millisecond), before.Epoch, st.Epoch)
	if took > haFailoverBound {
		t.Errorf("new leader ALIVE %s after SIGTERM, want < %s", took, haFailoverBound)
	}
	if !old.logContains(`leadership transferred`) {
		t.Errorf("the old leader's log does not mention the leadership transfer")
	}
	if old.logContains(`leadership transfer failed`) {
		t.Errorf("the old leader's log says the transfer failed")
	}
	if st.Epoch <= before.Epoch {
		t.Errorf("epoch %d, want > %d", st.Epoch, before.Epoch)
	}
	after := haExecutors(st, appID, wire.ExecutorRunning)
	for id, e := range haExecutors(before, appID, wire.ExecutorRunning) {
		if a, ok := after[id]; !ok || a.WorkerID != e.WorkerID {
			t.Errorf("executor %d on %s: after the handover %+v", id, e.WorkerID, a)
		}
	}
	if got := hc.execPids(); !haMapsEqual(got, pids) {
		t.Errorf("executor processes after the handover %v, before %v", got, pids)
	}
	if lost := stream.of(wire.EventExecutorLost); len(lost) > 0 {
		t.Errorf("the app was told executors were lost: %+v", lost)
	}
}

// TestHAPausedLeaderIsFenced pins fencing by epoch: a leader frozen
// (SIGSTOP) until another is elected cannot command the workers once it
// wakes: they have seen the newer epoch and refuse (409) launch, kill and
// app-finished commands carrying the old one; the old leader rejoins as a
// follower naming the new leader (/readyz 503 there, 200 on the new
// leader); and the executors are never killed nor duplicated: the same
// processes throughout, each listed once by the workers.
func TestHAPausedLeaderIsFenced(t *testing.T) {
	t.Parallel()
	// The app is held by heartbeats with a short lease: the frozen leader,
	// waking, finds it expired and wants to kill its executors, which the
	// new leader keeps. Workers outlive the pause in every master's eyes.
	hc := haStartCluster(t, 3, "--worker-timeout", "30s", "--app-timeout", "3s", "--recovery-timeout", "30s")
	startWorker(t, hc.urls(), 2, "1g", "--id", "w1")
	startWorker(t, hc.urls(), 2, "1g", "--id", "w2")
	hc.waitWorkers("w1", "w2")
	c, err := client.New(hc.urls(), secret, client.WithRequestTimeout(time.Second), client.WithRetryBudget(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	appID, err := c.RegisterApp(haCtx(t, 30*time.Second), hc.app("ha-fenced", 2))
	if err != nil {
		t.Fatal(err)
	}
	hbCtx, stopHB := context.WithCancel(context.Background())
	var hbWG sync.WaitGroup
	hbWG.Add(1)
	go func() {
		defer hbWG.Done()
		for hbCtx.Err() == nil {
			c.HeartbeatApp(hbCtx, appID)
			select {
			case <-hbCtx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { stopHB(); hbWG.Wait() })

	before := hc.runningApp(appID, 2, 20*time.Second)
	execs := haExecutors(before, appID, wire.ExecutorRunning)
	pids := hc.execPids()
	sampler := hc.samplePids(pids)
	old := hc.byID(before.MasterID)
	oldEpoch := before.Epoch
	workerURL := map[string]string{}
	for _, w := range before.Workers {
		workerURL[w.ID] = w.Address
	}

	pausedAt := time.Now()
	old.signal(syscall.SIGSTOP)
	newLeader, st := hc.leader(haFailoverBound+10*time.Second, hc.others(old))
	t.Logf("SIGSTOP of %s: %s ALIVE %s later (epoch %d → %d)", old.id, newLeader.id, time.Since(pausedAt).Round(time.Millisecond), oldEpoch, st.Epoch)
	if st.Epoch <= oldEpoch {
		t.Fatalf("new epoch %d, want > %d", st.Epoch, oldEpoch)
	}
	for _, id := range []string{"w1", "w2"} {
		eventually(t, 10*time.Second, id+" has seen the new epoch", func() error {
			ws, err := haWorkerState(workerURL[id])
			if err != nil {
				return err
			}
			if ws.Epoch != st.Epoch || ws.Master != newLeader.url {
				return fmt.Errorf("epoch %d master %s", ws.Epoch, ws.Master)
			}
			return nil
		})
	}

	// Commands with the old epoch: refused, and nothing changes.
	var anyExec wire.ExecutorStatus
	for _, e := range execs {
		anyExec = e
		break
	}
	wurl := workerURL[anyExec.WorkerID]
	stale := []struct {
		path string
		body any
	}{
		{"/v1/executors", wire.LaunchExecutor{Epoch: oldEpoch, MasterURL: old.url, AppID: appID, ExecutorID: 500, Cores: 1, MemoryMB: 64, Command: hc.execCommand()}},
		{"/v1/executors/kill", wire.KillExecutor{Epoch: oldEpoch, AppID: appID, ExecutorID: anyExec.ID}},
		{"/v1/apps/finished", wire.ApplicationFinished{Epoch: oldEpoch, AppID: appID}},
	}
	for _, cmd := range stale {
		status, body, err := haDo(http.MethodPost, wurl+cmd.path, cmd.body)
		if err != nil {
			t.Fatalf("POST %s: %v", cmd.path, err)
		}
		var se wire.StaleEpoch
		json.Unmarshal(body, &se)
		if status != http.StatusConflict || se.Epoch != st.Epoch || !strings.Contains(se.Error, "stale epoch") {
			t.Errorf("POST %s to %s with the old epoch %d: %d %s; want 409 naming epoch %d", cmd.path, anyExec.WorkerID, oldEpoch, status, body, st.Epoch)
		}
	}

	// Tempt the old leader: a kill of the app waits in its socket for it
	// to wake. If it handles it before it learns it was deposed, it kills
	// the executors in its memory and commands the workers to: with the
	// old epoch.
	tempted := haSendWhileStopped(t, http.MethodDelete, old.url+"/v1/apps/"+appID)
	old.signal(syscall.SIGCONT)
	contAt := time.Now()
	eventually(t, 10*time.Second, old.id+" a follower of "+newLeader.id, func() error {
		s, err := haCluster1(old.url)
		if err != nil {
			return err
		}
		if s.View != wire.ViewFollower || s.LeaderID != newLeader.id || s.Leader != newLeader.url {
			return fmt.Errorf("view %s status %s leader %s (%s)", s.View, s.Status, s.LeaderID, s.Leader)
		}
		return nil
	})
	t.Logf("%s a follower %s after SIGCONT", old.id, time.Since(contAt).Round(time.Millisecond))
	if code, body := haReadyz(old.url); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz on the old leader: %d %s, want 503", code, body)
	}
	if code, body := haReadyz(newLeader.url); code != http.StatusOK {
		t.Errorf("/readyz on the new leader: %d %s, want 200", code, body)
	}
	// The old leader may have acted on what it believed on waking (the
	// kill above, the app's lease expired); whatever it sent, the workers
	// must have refused. Which comes first, its step-down or these, is up
	// to its scheduler: this part is best-effort, logged.
	t.Logf("DELETE of the app queued on the stopped leader: %s", <-tempted)
	if old.logContains(`refused a command with a stale epoch`) {
		t.Logf("the old leader did send commands on waking, and the workers refused them (stale epoch)")
	} else {
		t.Logf("the old leader sent no command to a worker on waking")
	}

	// Leave the woken master time to do harm: the new leader's view must
	// stay the same while the workers heartbeat it.
	_, st2 := hc.leader(5*time.Second, nil)
	if st2.MasterID != newLeader.id {
		t.Errorf("leader now %s, want %s", st2.MasterID, newLeader.id)
	}
	eventually(t, 10*time.Second, "a worker heartbeat after the old leader woke", func() error {
		_, s, err := hc.findLeader()
		if err != nil {
			return err
		}
		for _, w := range s.Workers {
			if !w.LastHeartbeat.After(contAt) {
				return fmt.Errorf("%s last heartbeat %s", w.ID, w.LastHeartbeat.Format(time.TimeOnly))
			}
		}
		st2 = s
		return nil
	})
	if a, ok := appStatus(st2, appID); !ok || a.State != wire.AppRunning {
		t.Errorf("app after the old leader woke: %+v, want RUNNING", a)
	}
	after := haExecutors(st2, appID, wire.ExecutorRunning)
	if len(after) != len(execs) {
		t.Errorf("RUNNING executors %+v, want %+v", after, execs)
	}
	for id, e := range execs {
		if a, ok := after[id]; !ok || a.WorkerID != e.WorkerID {
			t.Errorf("executor %d on %s: now %+v", id, e.WorkerID, a)
		}
	}
	sampler.check(t)
	haCheckWorkersListOnce(t, []string{workerURL["w1"], workerURL["w2"]}, appID, pids)
}

// TestHAFollowerFromScratchCatchesUp pins catching up: a follower stopped,
// its data deleted, restarted with the same id and ports after ~300 writes
// (and small --raft-snapshot-threshold/--raft-trailing-logs) ends with the
// leader's state in its own follower view.
func TestHAFollowerFromScratchCatchesUp(t *testing.T) {
	t.Parallel()
	hc := haStartCluster(t, 3, "--raft-snapshot-threshold", "64", "--raft-trailing-logs", "16", "--raft-snapshot-interval", "1s")
	leader, _ := hc.leader(10*time.Second, nil)
	follower := hc.others(leader)[0]
	if err := follower.stop(15 * time.Second); err != nil {
		t.Fatalf("follower's exit after SIGTERM: %v", err)
	}
	entries, _ := os.ReadDir(follower.dataDir)
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(follower.dataDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}

	c := newClient(t, hc.urls()...)
	writes := haWrites(t, c, 150) // 150 registrations + 150 kills
	t.Logf("%d writes with %s down", writes, follower.id)

	// The log the follower would need is compacted into a snapshot.
	eventually(t, 15*time.Second, "a Raft snapshot on the leader", func() error {
		if haSnapshots(leader.dataDir) == 0 {
			return fmt.Errorf("no snapshot under %s", leader.dataDir)
		}
		return nil
	})
	follower.restart(t)
	_, lst := hc.leader(10*time.Second, nil)
	want := haAppIDs(lst)
	if len(want) < 150 {
		t.Fatalf("the leader lists %d apps, want ≥ 150", len(want))
	}
	eventually(t, 20*time.Second, follower.id+" caught up with the leader's apps", func() error {
		s, err := haCluster1(follower.url)
		if err != nil {
			return err
		}
		if s.View != wire.ViewFollower {
			return fmt.Errorf("view %s", s.View)
		}
		if got := haAppIDs(s); !slices.Equal(got, want) {
			return fmt.Errorf("%d apps, leader %d", len(got), len(want))
		}
		if s.Epoch != lst.Epoch {
			return fmt.Errorf("epoch %d, leader %d", s.Epoch, lst.Epoch)
		}
		return nil
	})
	// hashicorp/raft logs "Installed remote snapshot" on a follower that
	// catches up from one rather than from the log.
	if !follower.logContains(`Installed remote snapshot`) {
		t.Errorf("%s caught up without installing the leader's snapshot", follower.id)
	}
}

// haWrites registers n apps and kills each: 2n writes through the leader,
// four at a time. It returns the number of writes.
func haWrites(t *testing.T, c *client.Client, n int) int {
	t.Helper()
	ctx := haCtx(t, 2*time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				id, err := c.RegisterApp(ctx, wire.AppDescription{Name: fmt.Sprintf("ha-write-%d", i), Command: []string{"true"}})
				if err == nil {
					_, err = c.KillApp(ctx, id)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("write: %v", err)
	}
	return 2 * n
}

// haSnapshots counts the complete Raft snapshots under a master's data
// dir: hashicorp/raft's file store writes each as a directory holding
// meta.json (renamed from *.tmp once complete).
func haSnapshots(dataDir string) int {
	n := 0
	filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "meta.json" && !strings.HasSuffix(filepath.Dir(path), ".tmp") {
			n++
		}
		return nil
	})
	return n
}

// TestHAMembershipJoinLeave pins membership changes: a fourth master
// started with --join and --raft-addr becomes a voter listed in
// ClusterStatus.Masters and replicates the state; POST /v1/raft/leave
// removes it; the cluster keeps working, and as three voters again it
// survives losing its leader while the departed master is down too (with
// four voters, two down would leave no quorum).
func TestHAMembershipJoinLeave(t *testing.T) {
	t.Parallel()
	hc := haStartCluster(t, 3)
	c := newClient(t, hc.urls()...)
	// Apps are killed at once: an app no client holds would keep a new
	// leader RECOVERING (waiting for its client) for the recovery timeout.
	app1 := haRegisterAndKill(t, c, "ha-before-join")
	ip4 := "127.0.0.4"
	raft4 := fmt.Sprintf("%s:%d", ip4, freePort(t, ip4))
	m4 := startMaster(t, masterOpts{ip: ip4, id: "m4", extra: []string{"--raft-addr", raft4, "--join", strings.Join(hc.urls(), ",")}})

	var lst wire.ClusterStatus
	eventually(t, 20*time.Second, "m4 a voter in ClusterStatus.Masters", func() error {
		_, s, err := hc.findLeader()
		if err != nil {
			return err
		}
		lst = s
		for _, n := range s.Masters {
			if n.ID == "m4" {
				if !n.Voter || n.RaftAddr != raft4 || n.APIAddr != m4.url {
					return fmt.Errorf("m4 listed as %+v", n)
				}
				return nil
			}
		}
		return fmt.Errorf("masters %+v", s.Masters)
	})
	if len(lst.Masters) != 4 {
		t.Errorf("masters after the join: %+v, want 4", lst.Masters)
	}
	eventually(t, 10*time.Second, "m4's replica has the state", func() error {
		s, err := haCluster1(m4.url)
		if err != nil {
			return err
		}
		if s.View != wire.ViewFollower || s.LeaderID != lst.MasterID || !slices.Contains(haAppIDs(s), app1) {
			return fmt.Errorf("view %s leader %s apps %v", s.View, s.LeaderID, haAppIDs(s))
		}
		return nil
	})

	leader := hc.byID(lst.MasterID)
	status, body, err := haDo(http.MethodPost, leader.url+"/v1/raft/leave", wire.LeaveRequest{ID: "m4"})
	if err != nil || status != http.StatusOK {
		t.Fatalf("POST /v1/raft/leave m4: %d %s %v", status, body, err)
	}
	var nodes []wire.MasterNode
	if err := json.Unmarshal(body, &nodes); err != nil {
		t.Fatalf("leave's answer %s: %v", body, err)
	}
	if len(nodes) != 3 || slices.ContainsFunc(nodes, func(n wire.MasterNode) bool { return n.ID == "m4" }) {
		t.Errorf("masters in leave's answer: %+v, want m1..m3", nodes)
	}
	_, lst = hc.leader(10*time.Second, nil)
	var ids []string
	for _, n := range lst.Masters {
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"m1", "m2", "m3"}) {
		t.Errorf("masters after the leave: %v, want m1 m2 m3", ids)
	}
	haRegisterAndKill(t, c, "ha-after-leave")

	// Two of four down would be no quorum; two of three up is one.
	m4.kill()
	leader = hc.byID(lst.MasterID)
	leader.kill()
	newLeader, _ := hc.leader(20*time.Second, hc.others(leader))
	t.Logf("after the leave, with m4 and the leader %s down: %s leads", leader.id, newLeader.id)
	haRegisterAndKill(t, c, "ha-two-of-three")
}

// haSendWhileStopped sends a request to a stopped process (whose kernel
// still accepts the connection and buffers the request), returns once the
// request is written, and later reports the answer on the channel.
func haSendWhileStopped(t *testing.T, method, url string) <-chan string {
	t.Helper()
	written := make(chan struct{})
	answer := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(written) },
	}), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	go func() {
		defer cancel()
		resp, err := (&http.Client{CheckRedirect: haHTTP.CheckRedirect}).Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		answer <- fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}()
	select {
	case <-written:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s %s: request not written within 5s", method, url)
	}
	return answer
}

// haRegisterAndKill registers an app and kills it (two writes) and returns
// its id.
func haRegisterAndKill(t *testing.T, c *client.Client, name string) string {
	t.Helper()
	ctx := haCtx(t, 30*time.Second)
	id, err := c.RegisterApp(ctx, wire.AppDescription{Name: name, Command: []string{"true"}})
	if err != nil {
		t.Fatalf("registering app %s: %v", name, err)
	}
	if _, err := c.KillApp(ctx, id); err != nil {
		t.Fatalf("killing app %s: %v", id, err)
	}
	return id
}

// TestHAReadyzOnlyOnAliveLeader pins /readyz: 200 on the ALIVE leader
// only, 503 (naming the state) on the followers, and it moves with the
// leadership.
func TestHAReadyzOnlyOnAliveLeader(t *testing.T) {
	t.Parallel()
	hc := haStartCluster(t, 3)
	check := func(leader *masterProc) {
		t.Helper()
		for _, m := range hc.masters {
			if m.exited() {
				continue
			}
			code, body := haReadyz(m.url)
			switch {
			case m == leader && code != http.StatusOK:
				t.Errorf("/readyz on the leader %s: %d %s, want 200", m.id, code, body)
			case m != leader && (code != http.StatusServiceUnavailable || !strings.Contains(body, string(wire.MasterStandby))):
				t.Errorf("/readyz on the follower %s: %d %s, want 503 naming %s", m.id, code, body, wire.MasterStandby)
			}
		}
	}
	leader, _ := hc.leader(10*time.Second, nil)
	check(leader)
	// Behind the secret like everything but /healthz.
	if code, _, err := rawCall(http.MethodGet, leader.url+"/readyz", "", nil); err != nil || code != http.StatusUnauthorized {
		t.Errorf("/readyz without the secret: %d %v, want 401", code, err)
	}
	leader.kill()
	newLeader, _ := hc.leader(20*time.Second, hc.others(leader))
	check(newLeader)
}
