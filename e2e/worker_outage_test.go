package e2e

// A worker that stops answering (issue 21): frozen (SIGSTOP) longer than
// --worker-timeout, or cut off from the masters while it runs on. Its
// executors are LOST and replaced; when it is back, the copies it still
// runs are killed at once; an app with stopAfterDisconnect has its copies
// stopped by the worker itself before the replacements start.

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

const outageWorkerTimeout = 3 * time.Second

// outageWatch polls the leader and the processes while a worker is out,
// recording what must never happen: an app counting more live executors
// than it asked for, or (for apps in exclusive) two processes of the app
// alive at once.
type outageWatch struct {
	cl        *cluster
	limits    map[string]int  // app → most live executors it may list
	exclusive map[string]bool // app → never two processes at once
	bad       []string
}

func (o *outageWatch) look() wire.ClusterStatus {
	st, err := o.cl.status()
	if err != nil {
		return st
	}
	for app, most := range o.limits {
		if a, ok := appStatus(st, app); ok && len(liveExecutors(a)) > most {
			o.bad = append(o.bad, fmt.Sprintf("%s lists %d live executors, more than its %d: %+v", app, len(liveExecutors(a)), most, liveExecutors(a)))
		}
	}
	procs := map[string]int{}
	for key := range o.cl.execPids() {
		app, _, _ := strings.Cut(key, "/")
		procs[app]++
	}
	for app := range o.exclusive {
		if procs[app] > o.limits[app] {
			o.bad = append(o.bad, fmt.Sprintf("%s has %d processes alive at once, more than its %d executors", app, procs[app], o.limits[app]))
		}
	}
	return st
}

// until polls (look) until cond holds, or fails the test after timeout.
func (o *outageWatch) until(t *testing.T, timeout time.Duration, what string, cond func(wire.ClusterStatus) error) {
	t.Helper()
	testproc.Eventually(t, timeout, what, func() error { return cond(o.look()) })
}

func (o *outageWatch) check(t *testing.T) {
	t.Helper()
	for _, b := range o.bad {
		t.Error(b)
	}
}

// workerState waits for nothing: it says whether worker id is in state.
func workerStateIs(st wire.ClusterStatus, id string, state wire.WorkerState) error {
	if w, ok := workerIn(st, id); !ok || w.State != state {
		return fmt.Errorf("worker %s: %+v", id, w.State)
	}
	return nil
}

// onWorker reports whether app's RUNNING executors number n, all on worker.
func onWorker(st wire.ClusterStatus, app, worker string, n int) error {
	running := executorsByID(st, app, wire.ExecutorRunning)
	if len(running) != n {
		return fmt.Errorf("%s: %d RUNNING executors, want %d", app, len(running), n)
	}
	for _, e := range running {
		if e.WorkerID != worker {
			return fmt.Errorf("%s: executor %d RUNNING on %s, want %s", app, e.ID, e.WorkerID, worker)
		}
	}
	return nil
}

// gone waits until none of pids is alive, and says when that was seen.
func gone(t *testing.T, timeout time.Duration, what string, pids ...int) time.Time {
	t.Helper()
	testproc.Eventually(t, timeout, what, func() error {
		for _, p := range pids {
			if testproc.Alive(p) {
				return fmt.Errorf("pid %d alive", p)
			}
		}
		return nil
	})
	return time.Now()
}

// A worker frozen longer than --worker-timeout: DEAD, its executors LOST
// and replaced on the other worker, never counted twice; once it thaws,
// the copies it still runs are killed within a second of the masters
// seeing it again.
func TestAFrozenWorkersCopiesAreKilledWhenItWakes(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, cores: 2, memory: "1g", workers: []string{"w1"},
		flags: []string{"--worker-timeout", outageWorkerTimeout.String()}})
	app, _, _ := cl.runLongApp("frozen", 2)
	old := cl.execPids()
	oldPids := []int{old[app+"/0"], old[app+"/1"]}
	if oldPids[0] == 0 || oldPids[1] == 0 {
		t.Fatalf("executor processes %v", old)
	}
	cl.addWorker("w2", 2, "1g")
	cl.waitWorkers(20*time.Second, "w1", "w2")
	w := &outageWatch{cl: cl, limits: map[string]int{app: 2}}

	frozen := time.Now()
	signal(t, cl.worker("w1").Proc, syscall.SIGSTOP)
	w.until(t, 4*outageWorkerTimeout, "w1 DEAD and the app running on w2", func(st wire.ClusterStatus) error {
		if err := workerStateIs(st, "w1", wire.WorkerDead); err != nil {
			return err
		}
		return onWorker(st, app, "w2", 2)
	})
	t.Logf("w1 DEAD and the app replaced on w2 %s after the freeze", time.Since(frozen).Round(time.Millisecond))
	for _, p := range oldPids {
		if !testproc.Alive(p) {
			t.Errorf("pid %d on the frozen worker ended: nothing should have reached it", p)
		}
	}

	signal(t, cl.worker("w1").Proc, syscall.SIGCONT)
	thawed := time.Now()
	var back time.Time
	w.until(t, 10*time.Second, "w1 ALIVE again", func(st wire.ClusterStatus) error {
		back = time.Now()
		return workerStateIs(st, "w1", wire.WorkerAlive)
	})
	killed := gone(t, 10*time.Second, "the frozen worker's copies killed", oldPids...)
	t.Logf("thawed: ALIVE again after %s, its copies gone %s after that", back.Sub(thawed).Round(time.Millisecond), killed.Sub(back).Round(time.Millisecond))
	if d := killed.Sub(back); d > time.Second {
		t.Errorf("the copies were killed %s after the worker was back, want within a second", d)
	}
	w.until(t, 5*time.Second, "the app still on w2", func(st wire.ClusterStatus) error { return onWorker(st, app, "w2", 2) })
	w.check(t)
}

// A worker cut off from the masters but running on: its executors are
// LOST and replaced after --worker-timeout. An app that set
// stopAfterDisconnect below that timeout has its copies stopped by the
// worker first, so that no two of its processes ever run at once; an app
// that did not has two copies until the cut heals, when the old one is
// killed at once.
func TestACutOffWorkerStopsWhatAskedToStop(t *testing.T) {
	needRoot(t, "cutting a worker off with nftables")
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, cores: 2, memory: "1g", tenantsReach: true,
		flags: []string{"--worker-timeout", outageWorkerTimeout.String()}})
	cut, err := testcluster.NewNetCut(t)
	if err != nil {
		t.Fatal(err)
	}
	spec := workerSpec("w1", 2, "1g")
	spec.UID = 64201
	w1, err := cl.AddWorker(spec)
	if err != nil {
		t.Fatal(err)
	}
	cl.waitWorkers(20*time.Second, "w1")
	const stopAfter = 1500 * time.Millisecond
	careful := cl.longApp("careful", 1)
	careful.StopAfterDisconnect = wire.Duration(stopAfter)
	carefulID, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), careful)
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, carefulID)
	relaxed, _, _ := cl.runLongApp("relaxed", 1)
	cl.runningApp(carefulID, 1, 20*time.Second)
	pids := cl.execPids()
	carefulPid, relaxedPid := pids[carefulID+"/0"], pids[relaxed+"/0"]
	cl.addWorker("w2", 2, "1g")
	cl.waitWorkers(20*time.Second, "w1", "w2")
	w := &outageWatch{cl: cl, limits: map[string]int{carefulID: 1, relaxed: 1}, exclusive: map[string]bool{carefulID: true}}

	if err := cut.CutWorker(w1, cl.Masters); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	stopped := gone(t, 2*outageWorkerTimeout, "the careful app's copy stopped by its worker", carefulPid)
	if d := stopped.Sub(cutAt); d < stopAfter-500*time.Millisecond {
		t.Errorf("the careful copy stopped %s after the cut, before its stopAfterDisconnect of %s", d, stopAfter)
	}
	w.until(t, 4*outageWorkerTimeout, "w1 DEAD and both apps replaced on w2", func(st wire.ClusterStatus) error {
		if err := workerStateIs(st, "w1", wire.WorkerDead); err != nil {
			return err
		}
		if err := onWorker(st, carefulID, "w2", 1); err != nil {
			return err
		}
		return onWorker(st, relaxed, "w2", 1)
	})
	t.Logf("cut: the careful copy stopped after %s, w1 DEAD and both replaced by %s", stopped.Sub(cutAt).Round(time.Millisecond), time.Since(cutAt).Round(time.Millisecond))
	if !testproc.Alive(relaxedPid) {
		t.Error("the relaxed app's copy on the cut worker ended: only a master's kill should end it")
	}

	if err := cut.Heal(); err != nil {
		t.Fatal(err)
	}
	var back time.Time
	w.until(t, 15*time.Second, "w1 ALIVE again", func(st wire.ClusterStatus) error {
		back = time.Now()
		return workerStateIs(st, "w1", wire.WorkerAlive)
	})
	killed := gone(t, 10*time.Second, "the relaxed app's old copy killed", relaxedPid)
	if d := killed.Sub(back); d > time.Second {
		t.Errorf("the old copy was killed %s after the worker was back, want within a second", d)
	}
	w.until(t, 5*time.Second, "both apps still on w2", func(st wire.ClusterStatus) error {
		if err := onWorker(st, carefulID, "w2", 1); err != nil {
			return err
		}
		return onWorker(st, relaxed, "w2", 1)
	})
	w.check(t)
}
