package e2e

// High availability (see ha_failover_test.go): a leader frozen until it is
// replaced, and fenced off by the epoch once it wakes.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

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
	hc := haCluster(t, 3, []string{"--worker-timeout", "30s", "--app-timeout", "3s", "--recovery-timeout", "30s"}, "w1", "w2")
	c, err := client.New(hc.URLs(), secret, client.WithRequestTimeout(time.Second), client.WithRetryBudget(20*time.Second), bin.PKI.ClientOption())
	if err != nil {
		t.Fatal(err)
	}
	appID := hc.registerLongApp(c, "ha-fenced", 2)
	hbCtx, stopHB := context.WithCancel(context.Background())
	var hbWG sync.WaitGroup
	hbWG.Go(func() {
		for {
			c.HeartbeatApp(hbCtx, appID)
			if !poll.Sleep(hbCtx, 200*time.Millisecond) {
				return
			}
		}
	})
	t.Cleanup(func() { stopHB(); hbWG.Wait() })

	before := hc.runningApp(appID, 2, 20*time.Second)
	execs := executorsByID(before, appID, wire.ExecutorRunning)
	pids := hc.execPids()
	sampler := hc.samplePids(pids)
	old := hc.master(before.MasterID)
	oldEpoch := before.Epoch
	workerURL := map[string]string{}
	for _, w := range before.Workers {
		workerURL[w.ID] = w.Address
	}

	// Open a connection to the leader before it freezes: a TLS handshake
	// needs the server awake, and the request below must wait in its
	// socket (sendWhileStopped reuses this idle connection).
	if _, err := call(http.MethodGet, old.URL+"/healthz", "", nil); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	signal(t, old.Proc(), syscall.SIGSTOP)
	newLeader, st := hc.leader(haFailoverBound+10*time.Second, old)
	t.Logf("SIGSTOP of %s: %s ALIVE %s later (epoch %d → %d)", old.ID, newLeader.ID, time.Since(pausedAt).Round(time.Millisecond), oldEpoch, st.Epoch)
	if st.Epoch <= oldEpoch {
		t.Fatalf("new epoch %d, want > %d", st.Epoch, oldEpoch)
	}
	for _, id := range []string{"w1", "w2"} {
		testproc.Eventually(t, 10*time.Second, id+" has seen the new epoch", func() error {
			ws, err := workerState(workerURL[id])
			if err != nil {
				return err
			}
			if ws.Epoch != st.Epoch || ws.Master != newLeader.URL {
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
		{"/v1/executors", wire.LaunchExecutor{Epoch: oldEpoch, MasterURL: old.URL, AppID: appID, ExecutorID: 500, Process: wire.Process{Command: hc.execCommand(), Cores: 1, MemoryMB: 64}}},
		{"/v1/executors/kill", wire.KillExecutor{Epoch: oldEpoch, AppID: appID, ExecutorID: anyExec.ID}},
		{"/v1/apps/finished", wire.ApplicationFinished{Epoch: oldEpoch, AppID: appID}},
	}
	for _, cmd := range stale {
		r, err := call(http.MethodPost, wurl+cmd.path, secret, jsonOf(t, cmd.body))
		if err != nil {
			t.Fatalf("POST %s: %v", cmd.path, err)
		}
		var se wire.StaleEpoch
		json.Unmarshal([]byte(r.body), &se)
		if r.status != http.StatusConflict || se.Epoch != st.Epoch || !strings.Contains(se.Error, "stale epoch") {
			t.Errorf("POST %s to %s with the old epoch %d: %d %s; want 409 naming epoch %d", cmd.path, anyExec.WorkerID, oldEpoch, r.status, r.body, st.Epoch)
		}
	}

	// Tempt the old leader: a kill of the app waits in its socket for it
	// to wake. If it handles it before it learns it was deposed, it kills
	// the executors in its memory and commands the workers to: with the
	// old epoch.
	tempted := sendWhileStopped(t, http.MethodDelete, old.URL+"/v1/apps/"+appID)
	signal(t, old.Proc(), syscall.SIGCONT)
	contAt := time.Now()
	testproc.Eventually(t, 10*time.Second, old.ID+" a follower of "+newLeader.ID, func() error {
		s, err := hc.view(old)
		if err != nil {
			return err
		}
		if s.View != wire.ViewFollower || s.LeaderID != newLeader.ID || s.Leader != newLeader.URL {
			return fmt.Errorf("view %s status %s leader %s (%s)", s.View, s.Status, s.LeaderID, s.Leader)
		}
		return nil
	})
	t.Logf("%s a follower %s after SIGCONT", old.ID, time.Since(contAt).Round(time.Millisecond))
	if code, body := readyz(old.URL); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz on the old leader: %d %s, want 503", code, body)
	}
	if code, body := readyz(newLeader.URL); code != http.StatusOK {
		t.Errorf("/readyz on the new leader: %d %s, want 200", code, body)
	}
	// The old leader may have acted on what it believed on waking (the
	// kill above, the app's lease expired); whatever it sent, the workers
	// must have refused. Which comes first, its step-down or these, is up
	// to its scheduler: this part is best-effort, logged.
	t.Logf("DELETE of the app queued on the stopped leader: %s", <-tempted)
	if logCount(old.Proc(), `refused a command with a stale epoch`) > 0 {
		t.Logf("the old leader did send commands on waking, and the workers refused them (stale epoch)")
	} else {
		t.Logf("the old leader sent no command to a worker on waking")
	}

	// Leave the woken master time to do harm: the new leader's view must
	// stay the same while the workers heartbeat it.
	_, st2 := hc.leader(5 * time.Second)
	if st2.MasterID != newLeader.ID {
		t.Errorf("leader now %s, want %s", st2.MasterID, newLeader.ID)
	}
	st2 = hc.statusWhen(10*time.Second, "a worker heartbeat after the old leader woke", func(s wire.ClusterStatus) error {
		for _, w := range s.Workers {
			if !w.LastHeartbeat.After(contAt) {
				return fmt.Errorf("%s last heartbeat %s", w.ID, w.LastHeartbeat.Format(time.TimeOnly))
			}
		}
		return nil
	})
	if a, ok := appStatus(st2, appID); !ok || a.State != wire.AppRunning {
		t.Errorf("app after the old leader woke: %+v, want RUNNING", a)
	}
	checkExecutorsKept(t, "after the old leader woke", appID, execs, st2)
	sampler.check(t)
	checkWorkersListOnce(t, []string{workerURL["w1"], workerURL["w2"]}, appID, pids)
}

// pidSampler checks, every 50 ms until stopped, that the executors'
// processes stay exactly the ones it started with: none killed, none
// replaced, none added.
type pidSampler struct {
	stop     context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	problems []string
	samples  int
}

// samplePids starts a sampler expecting exactly want (see execPids).
func (cl *cluster) samplePids(want map[string]int) *pidSampler {
	ctx, stop := context.WithCancel(context.Background())
	p := &pidSampler{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		poll.Every(ctx, 50*time.Millisecond, func() {
			got := cl.execPids()
			p.mu.Lock()
			defer p.mu.Unlock()
			p.samples++
			if !maps.Equal(got, want) && len(p.problems) < 10 {
				p.problems = append(p.problems, fmt.Sprintf("%s: executor processes %v, want %v", time.Now().Format("15:04:05.000"), got, want))
			}
		})
	}()
	cl.t.Cleanup(p.finish)
	return p
}

// finish stops the sampler (idempotent).
func (p *pidSampler) finish() {
	p.stop()
	<-p.done
}

// check stops the sampler and fails the test if any sample differed.
func (p *pidSampler) check(t *testing.T) {
	t.Helper()
	p.finish()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		t.Errorf("executor processes changed during the test (%d samples):\n%s", p.samples, strings.Join(p.problems, "\n"))
	}
}

// checkWorkersListOnce checks that across the workers' own GET /v1/state
// every executor of the app is listed exactly once, and that exactly want
// are.
func checkWorkersListOnce(t *testing.T, workerURLs []string, appID string, want map[string]int) {
	t.Helper()
	seen := map[string]int{}
	for _, u := range workerURLs {
		st, err := workerState(u)
		if err != nil {
			t.Errorf("worker %s state: %v", u, err)
			continue
		}
		for _, e := range st.Executors {
			if e.AppID == appID {
				seen[execKey(e.AppID, e.ExecutorID)]++
			}
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("executor %s listed %d times by the workers", k, n)
		}
		if _, ok := want[k]; !ok {
			t.Errorf("workers run executor %s, which should not exist", k)
		}
	}
	for k := range want {
		if seen[k] == 0 {
			t.Errorf("executor %s is not listed by any worker", k)
		}
	}
}
