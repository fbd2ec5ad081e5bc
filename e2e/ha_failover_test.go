package e2e

// End-to-end tests of high availability: three masters replicating through
// Raft on 127.0.0.1, .2 and .3, real workers and executor processes, real
// signals (kill -9, SIGTERM, SIGSTOP/SIGCONT). Each test has its own cluster
// on its own ports, so they run in parallel. This file: the leader lost,
// by a kill or a graceful stop; then the helpers of every HA test:
// long-running apps whose executors are real processes found by the
// cluster's marker, and checks that those processes stay.

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// TestHALeaderKilledFailover pins failover after a kill -9 of the leader:
// another master leads (ALIVE) within seconds at a higher epoch; the workers
// re-register with it; the running app's executors are untouched (same
// processes, same ids RUNNING, no executorLost); the app's stream is told
// the master changed; new apps are accepted and get executors.
func TestHALeaderKilledFailover(t *testing.T) {
	t.Parallel()
	// A long recovery timeout: ALIVE within the bound can only mean that
	// every worker and the app answered the new leader.
	hc := haCluster(t, 3, []string{"--worker-timeout", "10s", "--recovery-timeout", "30s"}, "w1", "w2")
	const key = "ha-failover-registration"
	appID, stream, before := hc.runLongApp("ha-failover", 2, client.WithIdempotencyKey(key))
	execs := executorsByID(before, appID, wire.ExecutorRunning)
	pids := hc.execPids()
	if len(pids) != 2 {
		t.Fatalf("executor processes %v, want 2", pids)
	}
	old := hc.master(before.MasterID)

	killedAt := time.Now()
	old.Proc().Kill()
	newLeader, st := hc.leader(haFailoverBound+10*time.Second, old)
	took := time.Since(killedAt)
	t.Logf("failover after kill -9 of %s: %s ALIVE in %s (epoch %d → %d)", old.ID, newLeader.ID, took.Round(time.Millisecond), before.Epoch, st.Epoch)
	if took > haFailoverBound {
		t.Errorf("new leader ALIVE %s after the kill, want < %s", took, haFailoverBound)
	}
	if st.MasterID == old.ID || st.LeaderID != newLeader.ID {
		t.Errorf("new leader's view: masterId %q leaderId %q; want %q (not the killed %q)", st.MasterID, st.LeaderID, newLeader.ID, old.ID)
	}
	if st.Epoch <= before.Epoch {
		t.Errorf("epoch %d after the failover, want > %d", st.Epoch, before.Epoch)
	}
	for _, id := range []string{"w1", "w2"} {
		if w, ok := workerIn(st, id); !ok || w.State != wire.WorkerAlive {
			t.Errorf("worker %s in the new leader's view: %+v (listed %v), want ALIVE", id, w, ok)
		}
	}
	checkExecutorsKept(t, "after the failover", appID, execs, st)
	if got := hc.execPids(); !maps.Equal(got, pids) {
		t.Errorf("executor processes after the failover %v, before %v", got, pids)
	}
	stream.waitFor(t, 5*time.Second, "masterChanged on the app's stream", func([]appEvent) error {
		for _, ev := range stream.of(wire.EventMasterChanged) {
			if ev.Epoch == st.Epoch && ev.Leader == newLeader.URL {
				return nil
			}
		}
		return fmt.Errorf("events %s", stream.types())
	})
	checkNoneLost(t, stream)
	if ended, err := stream.ended(); ended {
		t.Errorf("the app's event stream gave up: %v", err)
	}

	// A client that never heard the answer and repeats the registration
	// under its key gets the same app from the new leader, not a second one.
	c2 := newClient(t, hc.URLs()...)
	again, err := c2.RegisterApp(callCtx(t, 30*time.Second), hc.longApp("ha-failover", 2), client.WithIdempotencyKey(key))
	if err != nil || again != appID {
		t.Errorf("registration repeated under its key after the failover: %q, %v; want %s", again, err, appID)
	}

	// New work goes through a client that knows nothing of the failover.
	app2, err := c2.RegisterApp(callCtx(t, 30*time.Second), hc.longApp("ha-after-failover", 2))
	if err != nil {
		t.Fatalf("registering an app after the failover: %v", err)
	}
	followEvents(t, c2, app2)
	hc.runningApp(app2, 2, 15*time.Second)
	got := hc.execPids()
	for k, pid := range pids {
		if got[k] != pid {
			t.Errorf("executor %s: pid %d, was %d", k, got[k], pid)
		}
	}
	checkNoneLost(t, stream)
}

// TestHALeaderSIGTERMTransfersLeadership pins a graceful stop of the
// leader: it hands leadership over (and says so in its log), exits 0 by
// itself, another master is ALIVE shortly, and the executors are untouched.
func TestHALeaderSIGTERMTransfersLeadership(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, []string{"--worker-timeout", "10s", "--recovery-timeout", "30s"}, "w1", "w2")
	appID, stream, before := hc.runLongApp("ha-sigterm", 2)
	pids := hc.execPids()
	old := hc.master(before.MasterID)

	stoppedAt := time.Now()
	if err := stop(t, old.Proc(), 15*time.Second); err != nil {
		t.Errorf("the leader's exit after SIGTERM: %v, want status 0", err)
	}
	exited := time.Since(stoppedAt)
	newLeader, st := hc.leader(haFailoverBound+10*time.Second, old)
	took := time.Since(stoppedAt)
	t.Logf("SIGTERM to %s: exited in %s; %s ALIVE %s after the signal (epoch %d → %d)", old.ID, exited.Round(time.Millisecond), newLeader.ID, took.Round(time.Millisecond), before.Epoch, st.Epoch)
	if took > haFailoverBound {
		t.Errorf("new leader ALIVE %s after SIGTERM, want < %s", took, haFailoverBound)
	}
	if logCount(old.Proc(), `leadership transferred`) == 0 {
		t.Errorf("the old leader's log does not mention the leadership transfer")
	}
	if logCount(old.Proc(), `leadership transfer failed`) > 0 {
		t.Errorf("the old leader's log says the transfer failed")
	}
	if st.Epoch <= before.Epoch {
		t.Errorf("epoch %d, want > %d", st.Epoch, before.Epoch)
	}
	checkExecutorsKept(t, "after the handover", appID, executorsByID(before, appID, wire.ExecutorRunning), st)
	if got := hc.execPids(); !maps.Equal(got, pids) {
		t.Errorf("executor processes after the handover %v, before %v", got, pids)
	}
	checkNoneLost(t, stream)
}

// TestHAReadyzOnlyOnAliveLeader pins /readyz: 200 on the ALIVE leader
// only, 503 (naming the state) on the followers, and it moves with the
// leadership.
func TestHAReadyzOnlyOnAliveLeader(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, nil)
	check := func(leader *testcluster.Master) {
		t.Helper()
		for _, m := range hc.Masters {
			if m.Proc().Exited() {
				continue
			}
			code, body := readyz(m.URL)
			switch {
			case m == leader && code != http.StatusOK:
				t.Errorf("/readyz on the leader %s: %d %s, want 200", m.ID, code, body)
			case m != leader && (code != http.StatusServiceUnavailable || !strings.Contains(body, string(wire.MasterStandby))):
				t.Errorf("/readyz on the follower %s: %d %s, want 503 naming %s", m.ID, code, body, wire.MasterStandby)
			}
		}
	}
	leader, _ := hc.leader(10 * time.Second)
	check(leader)
	// Behind the secret like everything but /healthz.
	if r, err := call(http.MethodGet, leader.URL+"/readyz", "", nil); err != nil || r.status != http.StatusUnauthorized {
		t.Errorf("/readyz without the secret: %d %v, want 401", r.status, err)
	}
	leader.Proc().Kill()
	newLeader, _ := hc.leader(20*time.Second, leader)
	check(newLeader)
}

// The helpers of every HA test.

// haFailoverBound is how long a failover (the old leader gone → a new
// leader ALIVE, every worker and app back) may take with Raft's default
// timing (--raft-multiplier 1).
const haFailoverBound = 10 * time.Second

// haCluster starts n Raft masters with the flags and, once one leads, the
// workers with 2 cores and 1g each, and waits until they are ALIVE.
func haCluster(t *testing.T, n int, flags []string, workers ...string) *cluster {
	t.Helper()
	return startCluster(t, clusterSpec{masters: n, flags: flags, workers: workers, cores: 2, memory: "1g"})
}

// longApp returns a long-running app's description: executors of 1 core
// and 64 MB whose process (a shell waiting for a sleep) carries the
// cluster's marker followed by "<app id>/<executor id>" on its command
// line.
func (cl *cluster) longApp(name string, maxCores int) wire.AppDescription {
	return wire.AppDescription{
		Name:                name,
		Command:             cl.execCommand(),
		MaxCores:            maxCores,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
	}
}

func (cl *cluster) execCommand() []string {
	// The shell forks sleep and waits (a command follows it), so the
	// process that carries the marker lives as long as the executor.
	return []string{"/bin/sh", "-c", "sleep 3600; : " + cl.marker + " " + wire.PlaceholderAppID + "/" + wire.PlaceholderExecutorID}
}

// registerLongApp registers a long-running app (see longApp) through c.
func (cl *cluster) registerLongApp(c *client.Client, name string, maxCores int, opts ...client.SubmitOption) string {
	cl.t.Helper()
	appID, err := c.RegisterApp(callCtx(cl.t, 30*time.Second), cl.longApp(name, maxCores), opts...)
	if err != nil {
		cl.t.Fatal(err)
	}
	return appID
}

// runLongApp registers a long-running app through the cluster's client,
// follows its events (its lease) and waits until its maxCores executors
// run; it returns the app's id, its stream and the leader's view then.
func (cl *cluster) runLongApp(name string, maxCores int, opts ...client.SubmitOption) (string, *appEvents, wire.ClusterStatus) {
	cl.t.Helper()
	appID := cl.registerLongApp(cl.c, name, maxCores, opts...)
	stream := followEvents(cl.t, cl.c, appID)
	return appID, stream, cl.runningApp(appID, maxCores, 20*time.Second)
}

// execPids maps "<app id>/<executor id>" to the pid of every executor
// process of this cluster now alive.
func (cl *cluster) execPids() map[string]int {
	out := map[string]int{}
	for _, p := range testcluster.Marked(cl.marker) {
		_, rest, ok := strings.Cut(p.Cmdline, cl.marker+" ")
		if !ok {
			continue
		}
		key, _, _ := strings.Cut(rest, " ")
		if prev, dup := out[key]; dup {
			// Two processes for one executor: report both.
			out[key+"#dup"] = prev
		}
		out[key] = p.Pid
	}
	return out
}

// execKey is the key of execPids.
func execKey(appID string, execID int) string { return fmt.Sprintf("%s/%d", appID, execID) }

// runningApp waits until the ALIVE leader shows the app with want RUNNING
// executors, each with its process alive, and returns the leader's view.
func (cl *cluster) runningApp(appID string, want int, timeout time.Duration) wire.ClusterStatus {
	cl.t.Helper()
	return cl.statusWhen(timeout, fmt.Sprintf("app %s with %d RUNNING executors and their processes", appID, want), func(st wire.ClusterStatus) error {
		running := executorsByID(st, appID, wire.ExecutorRunning)
		if len(running) != want {
			a, _ := appStatus(st, appID)
			return fmt.Errorf("%d RUNNING executors in %s's view (app %s, executors %+v)", len(running), st.MasterID, a.State, a.Executors)
		}
		pids := cl.execPids()
		for id := range running {
			if _, ok := pids[execKey(appID, id)]; !ok {
				return fmt.Errorf("no process for executor %d", id)
			}
		}
		return nil
	})
}

// checkExecutorsKept checks that the app's executors RUNNING before (by
// id) are the ones RUNNING in st, each on the same worker.
func checkExecutorsKept(t *testing.T, when, appID string, before map[int]wire.ExecutorStatus, st wire.ClusterStatus) {
	t.Helper()
	after := executorsByID(st, appID, wire.ExecutorRunning)
	if len(after) != len(before) {
		t.Errorf("RUNNING executors %s %+v, before %+v", when, after, before)
	}
	for id, e := range before {
		if a, ok := after[id]; !ok || a.WorkerID != e.WorkerID {
			t.Errorf("executor %d (on %s) %s: %+v", id, e.WorkerID, when, a)
		}
	}
}

// checkNoneLost checks that the app's stream told it of no lost executor.
func checkNoneLost(t *testing.T, stream *appEvents) {
	t.Helper()
	if lost := stream.of(wire.EventExecutorLost); len(lost) > 0 {
		t.Errorf("the app was told executors were lost: %+v", lost)
	}
}
