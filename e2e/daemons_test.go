package e2e

// What the daemons do when processes die: a worker killed with SIGKILL
// (here), a master restarted (daemons_restart_test.go), executors that
// always fail (daemons_failing_test.go).

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestDaemonsWorkerKilledExecutorsLostAndReplacedInCoreUnits pins what a
// SIGKILLed worker leads to: the master declares it DEAD once its heartbeats
// have been missing for --worker-timeout (not before, not much later), its
// executors are LOST and each is reported to the app's client as an
// executorLost event, its executor processes die with it, and the app's
// cores come back as executors of at least --min-core-unit cores.
//
// Layout: three 6-core workers, an app of 8 cores without a fixed executor
// size, --min-core-unit 4 and spread placement. The app gets two 4-core
// executors on two workers (with a unit of 1 it would get 3+3+2). Killing
// one leaves 2 cores free on the other and 6 on the third: the lost 4 cores
// must come back as one 4-core executor on the third worker, never as
// smaller executors filling the 2 free cores.
func TestDaemonsWorkerKilledExecutorsLostAndReplacedInCoreUnits(t *testing.T) {
	t.Parallel()
	marker := newMarker(t)
	cl := daemonCluster(t, []string{"--min-core-unit", "4", "--placement", "spread"}, 6, "dw1", "dw2", "dw3")

	appID, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{
		Name: "core-units", Command: sleepArgs(marker), MaxCores: 8, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	events := followEvents(t, cl.c, appID)

	// Two RUNNING 4-core executors on two different workers, two processes.
	a := cl.appWhen(appID, 20*time.Second, "app placed as two 4-core executors", func(a wire.AppStatus) error {
		live := liveExecutors(a)
		if len(live) != 2 || a.CoresGranted != 8 {
			return fmt.Errorf("want 2 executors holding 8 cores, have %d holding %d", len(live), a.CoresGranted)
		}
		for _, e := range live {
			if e.Cores != 4 {
				return fmt.Errorf("executor %d has %d cores, want 4 (--min-core-unit 4)", e.ID, e.Cores)
			}
			if e.State != wire.ExecutorRunning {
				return fmt.Errorf("executor %d is %s", e.ID, e.State)
			}
		}
		if live[0].WorkerID == live[1].WorkerID {
			return fmt.Errorf("both executors on %s, want them spread", live[0].WorkerID)
		}
		if n := len(pidsOf(marker)); n != 2 {
			return fmt.Errorf("%d executor processes, want 2", n)
		}
		return nil
	})
	victimID := liveExecutors(a)[0].WorkerID
	victim := cl.worker(victimID)
	var lostIDs []int
	for _, e := range liveExecutors(a) {
		if e.WorkerID == victimID {
			lostIDs = append(lostIDs, e.ID)
		}
	}
	victimPids := pidsUnder(marker, victim.WorkDir)
	if len(victimPids) != len(lostIDs) {
		t.Fatalf("victim %s runs executor processes %v, want %d (its executors %v)", victimID, victimPids, len(lostIDs), lostIDs)
	}

	// Record every executor the app holds at any time from now on: none may
	// be smaller than the unit, at no point of the re-placement. (The
	// polls run their conditions in the test's goroutine: no lock.)
	var small []string
	checkSizes := func(a wire.AppStatus) {
		for _, e := range liveExecutors(a) {
			if e.Cores < 4 {
				small = append(small, fmt.Sprintf("executor %d on %s with %d cores (%s)", e.ID, e.WorkerID, e.Cores, e.State))
			}
		}
	}

	killed := time.Now()
	victim.Kill()
	cl.statusWhen(3*daemonWorkerTimeout, "killed worker DEAD", func(st wire.ClusterStatus) error {
		if a, ok := appStatus(st, appID); ok {
			checkSizes(a)
		}
		w, ok := workerIn(st, victimID)
		if !ok {
			return fmt.Errorf("worker %s not listed", victimID)
		}
		if w.State != wire.WorkerDead {
			return fmt.Errorf("worker %s is %s", victimID, w.State)
		}
		return nil
	})
	elapsed := time.Since(killed)
	t.Logf("worker %s DEAD %s after SIGKILL (worker timeout %s)", victimID, elapsed.Round(time.Millisecond), daemonWorkerTimeout)
	if elapsed > daemonWorkerTimeout+time.Second {
		t.Errorf("worker DEAD %s after the kill, want within the worker timeout %s + 1s", elapsed, daemonWorkerTimeout)
	}
	// No lower bound: on a host that is up, the leader finds nothing
	// listening at a SIGKILLed worker's address and removes it at once
	// (e2e/worker_gone_test.go measures that, and a freeze's timeout).

	// The worker's children died with it (SIGKILL to the worker reaches
	// them through their parent-death signal).
	testproc.Eventually(t, 5*time.Second, "the killed worker's executor processes gone", func() error {
		for _, pid := range pidsOf(marker) {
			if slices.Contains(victimPids, pid) {
				return fmt.Errorf("executor process %d of the killed worker still runs", pid)
			}
		}
		return nil
	})

	// Each lost executor is reported to the app's client.
	events.waitFor(t, 10*time.Second, "executorLost events", func(evs []appEvent) error {
		for _, id := range lostIDs {
			found := false
			for _, ev := range evs {
				if ev.Type != wire.EventExecutorLost || ev.Executor == nil || ev.Executor.ID != id {
					continue
				}
				found = true
				if !strings.HasPrefix(ev.Message, "worker lost:") {
					return fmt.Errorf("executorLost of %d has message %q, want it to start with \"worker lost:\"", id, ev.Message)
				}
				if ev.Executor.State != wire.ExecutorLost || ev.Executor.WorkerID != victimID {
					return fmt.Errorf("executorLost of %d carries %+v", id, *ev.Executor)
				}
			}
			if !found {
				return fmt.Errorf("no executorLost for executor %d; events: %s", id, eventTypes(evs))
			}
		}
		return nil
	})

	// The lost cores come back as one whole 4-core executor on the worker
	// that has room for it; the status marks the old ones LOST.
	a = cl.appWhen(appID, 15*time.Second, "lost cores re-placed", func(a wire.AppStatus) error {
		checkSizes(a)
		for _, id := range lostIDs {
			for _, e := range a.Executors {
				if e.ID == id && e.State != wire.ExecutorLost {
					return fmt.Errorf("executor %d of the dead worker is %s, want LOST", id, e.State)
				}
			}
		}
		live := liveExecutors(a)
		if a.CoresGranted != 8 || len(live) != 2 {
			return fmt.Errorf("%d executors holding %d cores, want 2 holding 8", len(live), a.CoresGranted)
		}
		for _, e := range live {
			if e.State != wire.ExecutorRunning {
				return fmt.Errorf("executor %d is %s", e.ID, e.State)
			}
			if e.WorkerID == victimID {
				return fmt.Errorf("executor %d placed on the dead worker", e.ID)
			}
		}
		if n := len(pidsOf(marker)); n != 2 {
			return fmt.Errorf("%d executor processes, want 2", n)
		}
		return nil
	})
	if len(small) > 0 {
		t.Errorf("executors smaller than --min-core-unit 4 seen during re-placement: %v", small)
	}
	for _, e := range liveExecutors(a) {
		if slices.Contains(lostIDs, e.ID) {
			t.Errorf("executor id %d reused after it was lost", e.ID)
		}
	}
}

// TestDaemonsDriversOfKilledWorker pins what happens to drivers whose worker
// is lost: a supervised one ends RELAUNCHING and lives on under a new id,
// RUNNING on another worker; an unsupervised one ends in ERROR and is not
// restarted anywhere.
func TestDaemonsDriversOfKilledWorker(t *testing.T) {
	t.Parallel()
	supMarker, unsupMarker := newMarker(t), newMarker(t)
	// One worker first, so that both drivers land on it.
	cl := daemonCluster(t, nil, 2, "dd-first")
	submit := func(marker string, supervise bool) string {
		t.Helper()
		id, err := cl.c.SubmitDriver(callCtx(t, 20*time.Second), wire.DriverDescription{
			Command: sleepArgs(marker), Cores: 1, MemoryMB: 64, Supervise: supervise,
		})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	sup, unsup := submit(supMarker, true), submit(unsupMarker, false)
	for _, id := range []string{sup, unsup} {
		cl.driverWhen(id, 15*time.Second, "driver RUNNING on the first worker", func(d wire.DriverStatus) error {
			if d.State != wire.DriverRunning || d.WorkerID != "dd-first" {
				return fmt.Errorf("want RUNNING on dd-first")
			}
			return nil
		})
	}
	testproc.Eventually(t, 10*time.Second, "driver processes started", func() error {
		if n, m := len(pidsOf(supMarker)), len(pidsOf(unsupMarker)); n != 1 || m != 1 {
			return fmt.Errorf("%d supervised and %d unsupervised driver processes, want 1 and 1", n, m)
		}
		return nil
	})

	second := cl.addWorker("dd-second", 2, "4g")
	cl.waitWorkers(20*time.Second, "dd-first", "dd-second")
	cl.worker("dd-first").Kill()

	old := cl.driverWhen(sup, 15*time.Second, "supervised driver relaunched", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRelaunching {
			return fmt.Errorf("want RELAUNCHING")
		}
		if d.RelaunchedAs == "" || d.RelaunchedAs == sup {
			return fmt.Errorf("relaunched as %q, want a new id", d.RelaunchedAs)
		}
		return nil
	})
	cl.driverWhen(old.RelaunchedAs, 15*time.Second, "the relaunched driver RUNNING on the other worker", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRunning || d.WorkerID != "dd-second" {
			return fmt.Errorf("want RUNNING on dd-second")
		}
		if d.RelaunchOf != sup || !d.Supervise || !slices.Equal(d.Command, sleepArgs(supMarker)) {
			return fmt.Errorf("relaunchOf %q supervise %v command %q: not the same driver's replacement", d.RelaunchOf, d.Supervise, d.Command)
		}
		return nil
	})
	cl.driverWhen(unsup, 15*time.Second, "unsupervised driver in ERROR", func(d wire.DriverStatus) error {
		if d.State != wire.DriverError {
			return fmt.Errorf("want ERROR")
		}
		if d.RelaunchedAs != "" {
			return fmt.Errorf("an unsupervised driver was relaunched as %s", d.RelaunchedAs)
		}
		if !strings.Contains(d.Message, "worker lost") {
			return fmt.Errorf("message %q does not say the worker was lost", d.Message)
		}
		return nil
	})
	// Processes: the supervised driver runs again, on the second worker;
	// the unsupervised one is gone for good.
	testproc.Eventually(t, 10*time.Second, "driver processes after the loss", func() error {
		if pids := pidsUnder(supMarker, second.WorkDir); len(pids) != 1 || len(pidsOf(supMarker)) != 1 {
			return fmt.Errorf("supervised driver: %d processes on the second worker, %d in all; want 1 and 1", len(pids), len(pidsOf(supMarker)))
		}
		if n := len(pidsOf(unsupMarker)); n != 0 {
			return fmt.Errorf("%d unsupervised driver processes, want 0", n)
		}
		return nil
	})
	st := cl.mustStatus()
	if len(st.ActiveDrivers) != 1 || st.ActiveDrivers[0].ID != old.RelaunchedAs {
		t.Errorf("active drivers %+v, want only the relaunched %s", st.ActiveDrivers, old.RelaunchedAs)
	}
}
