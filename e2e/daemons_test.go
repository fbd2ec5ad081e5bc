package e2e

// What the daemons do when processes die: a worker killed with SIGKILL, a
// master restarted, executors that always fail, executors nobody knows,
// commands from an older master.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	marker := dMarker(t)
	cl := dStartCluster(t, []string{"--min-core-unit", "4", "--placement", "spread"}, 6, "dw1", "dw2", "dw3")

	appID, err := cl.c.RegisterApp(dCtx(t, 20*time.Second), wire.AppDescription{
		Name: "core-units", Command: dSleep(marker), MaxCores: 8, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	events := dFollow(t, cl.c, appID)

	// Two RUNNING 4-core executors on two different workers, two processes.
	a := cl.app(t, appID, 20*time.Second, "app placed as two 4-core executors", func(a wire.AppStatus) error {
		live := dLive(a)
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
	victimID := dLive(a)[0].WorkerID
	victim := cl.workers[victimID]
	var lostIDs []int
	for _, e := range dLive(a) {
		if e.WorkerID == victimID {
			lostIDs = append(lostIDs, e.ID)
		}
	}
	victimPids := dPidsUnder(marker, victim.workDir)
	if len(victimPids) != len(lostIDs) {
		t.Fatalf("victim %s runs executor processes %v, want %d (its executors %v)", victimID, victimPids, len(lostIDs), lostIDs)
	}

	// Record every executor the app holds at any time from now on: none may
	// be smaller than the unit, at no point of the re-placement.
	var smallMu sync.Mutex
	var small []string
	checkSizes := func(a wire.AppStatus) {
		for _, e := range dLive(a) {
			if e.Cores < 4 {
				smallMu.Lock()
				small = append(small, fmt.Sprintf("executor %d on %s with %d cores (%s)", e.ID, e.WorkerID, e.Cores, e.State))
				smallMu.Unlock()
			}
		}
	}

	killed := time.Now()
	victim.kill()
	eventually(t, 3*dWorkerTimeout, "killed worker DEAD", func() error {
		st, err := cl.status(t)
		if err != nil {
			return err
		}
		if a, ok := appStatus(st, appID); ok {
			checkSizes(a)
		}
		w, ok := dWorker(st, victimID)
		if !ok {
			return fmt.Errorf("worker %s not listed", victimID)
		}
		if w.State != wire.WorkerDead {
			return fmt.Errorf("worker %s is %s", victimID, w.State)
		}
		return nil
	})
	elapsed := time.Since(killed)
	t.Logf("worker %s DEAD %s after SIGKILL (worker timeout %s)", victimID, elapsed.Round(time.Millisecond), dWorkerTimeout)
	if elapsed > dWorkerTimeout+time.Second {
		t.Errorf("worker DEAD %s after the kill, want within the worker timeout %s + 1s", elapsed, dWorkerTimeout)
	}
	if elapsed <= dWorkerTimeout/2 {
		t.Errorf("worker DEAD %s after the kill, before half the worker timeout %s: not the timeout's doing", elapsed, dWorkerTimeout)
	}

	// The worker's children died with it (SIGKILL to the worker reaches
	// them through their parent-death signal).
	eventually(t, 5*time.Second, "the killed worker's executor processes gone", func() error {
		for _, pid := range pidsOf(marker) {
			if slices.Contains(victimPids, pid) {
				return fmt.Errorf("executor process %d of the killed worker still runs", pid)
			}
		}
		return nil
	})

	// Each lost executor is reported to the app's client.
	events.waitFor(t, 10*time.Second, "executorLost events", func(evs []wire.AppEvent) error {
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
				return fmt.Errorf("no executorLost for executor %d; events: %s", id, dEventTypes(evs))
			}
		}
		return nil
	})

	// The lost cores come back as one whole 4-core executor on the worker
	// that has room for it; the status marks the old ones LOST.
	a = cl.app(t, appID, 15*time.Second, "lost cores re-placed", func(a wire.AppStatus) error {
		checkSizes(a)
		for _, id := range lostIDs {
			for _, e := range a.Executors {
				if e.ID == id && e.State != wire.ExecutorLost {
					return fmt.Errorf("executor %d of the dead worker is %s, want LOST", id, e.State)
				}
			}
		}
		live := dLive(a)
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
	smallMu.Lock()
	defer smallMu.Unlock()
	if len(small) > 0 {
		t.Errorf("executors smaller than --min-core-unit 4 seen during re-placement: %v", small)
	}
	for _, e := range dLive(a) {
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
	supMarker, unsupMarker := dMarker(t), dMarker(t)
	// One worker first, so that both drivers land on it.
	cl := dStartCluster(t, nil, 2, "dd-first")
	submit := func(marker string, supervise bool) string {
		t.Helper()
		id, err := cl.c.SubmitDriver(dCtx(t, 20*time.Second), wire.DriverDescription{
			Command: dSleep(marker), Cores: 1, MemoryMB: 64, Supervise: supervise,
		})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	sup, unsup := submit(supMarker, true), submit(unsupMarker, false)
	for _, id := range []string{sup, unsup} {
		cl.driver(t, id, 15*time.Second, "driver RUNNING on the first worker", func(d wire.DriverStatus) error {
			if d.State != wire.DriverRunning || d.WorkerID != "dd-first" {
				return fmt.Errorf("want RUNNING on dd-first")
			}
			return nil
		})
	}
	eventually(t, 10*time.Second, "driver processes started", func() error {
		if n, m := len(pidsOf(supMarker)), len(pidsOf(unsupMarker)); n != 1 || m != 1 {
			return fmt.Errorf("%d supervised and %d unsupervised driver processes, want 1 and 1", n, m)
		}
		return nil
	})

	second := cl.addWorker(t, "dd-second", 2)
	aliveWorkers(t, cl.c, 2, 20*time.Second)
	cl.workers["dd-first"].kill()

	old := cl.driver(t, sup, 15*time.Second, "supervised driver relaunched", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRelaunching {
			return fmt.Errorf("want RELAUNCHING")
		}
		if d.RelaunchedAs == "" || d.RelaunchedAs == sup {
			return fmt.Errorf("relaunched as %q, want a new id", d.RelaunchedAs)
		}
		return nil
	})
	cl.driver(t, old.RelaunchedAs, 15*time.Second, "the relaunched driver RUNNING on the other worker", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRunning || d.WorkerID != "dd-second" {
			return fmt.Errorf("want RUNNING on dd-second")
		}
		if d.RelaunchOf != sup || !d.Supervise || !slices.Equal(d.Command, dSleep(supMarker)) {
			return fmt.Errorf("relaunchOf %q supervise %v command %q: not the same driver's replacement", d.RelaunchOf, d.Supervise, d.Command)
		}
		return nil
	})
	cl.driver(t, unsup, 15*time.Second, "unsupervised driver in ERROR", func(d wire.DriverStatus) error {
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
	eventually(t, 10*time.Second, "driver processes after the loss", func() error {
		if pids := dPidsUnder(supMarker, second.workDir); len(pids) != 1 || len(pidsOf(supMarker)) != 1 {
			return fmt.Errorf("supervised driver: %d processes on the second worker, %d in all; want 1 and 1", len(pids), len(pidsOf(supMarker)))
		}
		if n := len(pidsOf(unsupMarker)); n != 0 {
			return fmt.Errorf("%d unsupervised driver processes, want 0", n)
		}
		return nil
	})
	st := cl.mustStatus(t)
	if len(st.ActiveDrivers) != 1 || st.ActiveDrivers[0].ID != old.RelaunchedAs {
		t.Errorf("active drivers %+v, want only the relaunched %s", st.ActiveDrivers, old.RelaunchedAs)
	}
}

// TestDaemonsMasterRestartRecoversEverything pins the master's recovery from
// its --data-dir after a restart: apps, drivers and workers come back, the
// workers register again, the executors and the driver keep running
// untouched (the very same processes), the app's client (an event stream
// that reconnects by itself) gets masterChanged and its app stays RUNNING
// with the same executors, and the epoch grew. Then (stale epoch) a worker
// refuses commands carrying the epoch of the master before the restart.
func TestDaemonsMasterRestartRecoversEverything(t *testing.T) {
	t.Parallel()
	execMarker, driverMarker, staleMarker := dMarker(t), dMarker(t), dMarker(t)
	cl := dStartCluster(t, []string{"--recovery-timeout", "3s"}, 2, "dr1", "dr2")

	driverID, err := cl.c.SubmitDriver(dCtx(t, 20*time.Second), wire.DriverDescription{Command: dSleep(driverMarker), Cores: 1, MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	appID, err := cl.c.RegisterApp(dCtx(t, 20*time.Second), wire.AppDescription{
		Name: "survivor", Command: dSleep(execMarker), MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	events := dFollow(t, cl.c, appID)
	before := cl.app(t, appID, 20*time.Second, "app RUNNING with 2 executors", func(a wire.AppStatus) error {
		if a.State != wire.AppRunning || len(executorsIn(a, wire.ExecutorRunning)) != 2 {
			return fmt.Errorf("want RUNNING with 2 RUNNING executors")
		}
		return nil
	})
	driverBefore := cl.driver(t, driverID, 15*time.Second, "driver RUNNING", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRunning {
			return fmt.Errorf("want RUNNING")
		}
		return nil
	})
	var execPids, driverPids []int
	eventually(t, 10*time.Second, "processes started", func() error {
		execPids, driverPids = pidsOf(execMarker), pidsOf(driverMarker)
		if len(execPids) != 2 || len(driverPids) != 1 {
			return fmt.Errorf("%d executor and %d driver processes, want 2 and 1", len(execPids), len(driverPids))
		}
		return nil
	})
	st0 := cl.mustStatus(t)
	epoch0 := st0.Epoch

	if err := cl.m.stop(10 * time.Second); err != nil {
		t.Fatalf("master did not exit cleanly on SIGTERM: %v", err)
	}
	// A master's death kills nothing.
	if !dSamePids(pidsOf(execMarker), execPids) || !dSamePids(pidsOf(driverMarker), driverPids) {
		t.Fatalf("processes changed while the master was down: executors %v (were %v), driver %v (was %v)",
			pidsOf(execMarker), execPids, pidsOf(driverMarker), driverPids)
	}
	cl.m.restart(t)

	after := cl.mustStatusEventually(t, 20*time.Second, "cluster recovered", func(st wire.ClusterStatus) error {
		if st.Epoch <= epoch0 {
			return fmt.Errorf("epoch %d, want more than %d", st.Epoch, epoch0)
		}
		for _, id := range []string{"dr1", "dr2"} {
			if w, ok := dWorker(st, id); !ok || w.State != wire.WorkerAlive {
				return fmt.Errorf("worker %s: %+v, want ALIVE", id, w)
			}
		}
		if len(st.Workers) != 2 {
			return fmt.Errorf("%d workers, want the same 2", len(st.Workers))
		}
		a, ok := appStatus(st, appID)
		if !ok || a.State != wire.AppRunning {
			return fmt.Errorf("app %s: %s, want RUNNING", appID, a.State)
		}
		if got, want := dExecs(a), dExecs(before); got != want {
			return fmt.Errorf("app executors %s, want the same as before %s", got, want)
		}
		if len(st.ActiveDrivers) != 1 || st.ActiveDrivers[0].ID != driverID || st.ActiveDrivers[0].State != wire.DriverRunning ||
			st.ActiveDrivers[0].WorkerID != driverBefore.WorkerID {
			return fmt.Errorf("active drivers %+v, want %s RUNNING on %s", st.ActiveDrivers, driverID, driverBefore.WorkerID)
		}
		return nil
	})
	events.waitFor(t, 10*time.Second, "masterChanged on the app's stream", func(evs []wire.AppEvent) error {
		for i, ev := range evs {
			if ev.Type == wire.EventMasterChanged {
				if ev.Epoch != after.Epoch {
					return fmt.Errorf("masterChanged with epoch %d, want %d", ev.Epoch, after.Epoch)
				}
				for _, later := range evs[i+1:] {
					if later.Type == wire.EventSnapshot && later.App != nil && later.App.State != wire.AppFinished {
						return nil
					}
				}
				return fmt.Errorf("no snapshot after masterChanged: %s", dEventTypes(evs))
			}
		}
		return fmt.Errorf("no masterChanged: %s", dEventTypes(evs))
	})
	for _, ev := range events.all() {
		if ev.Type == wire.EventExecutorLost || ev.Type == wire.EventAppRemoved {
			t.Errorf("the app's client got %s (%s) across the restart", ev.Type, ev.Message)
		}
	}
	// Each worker registered again (once with the first master, once or
	// more with the restarted one), under the same id.
	for _, id := range []string{"dr1", "dr2"} {
		n := 0
		for _, l := range cl.workers[id].logLines() {
			if strings.Contains(l, "registered with master") {
				n++
			}
		}
		if n < 2 {
			t.Errorf("worker %s registered %d times, want again after the restart", id, n)
		}
	}
	// The same processes, never restarted.
	if !dSamePids(pidsOf(execMarker), execPids) || !dSamePids(pidsOf(driverMarker), driverPids) {
		t.Fatalf("processes changed across the restart: executors %v (were %v), driver %v (was %v)",
			pidsOf(execMarker), execPids, pidsOf(driverMarker), driverPids)
	}

	// Stale epoch: a command carrying the old master's epoch is refused
	// (409) by a worker that has seen the new one, and does nothing.
	t.Run("StaleEpochRefusedByWorker", func(t *testing.T) {
		w, _ := dWorker(after, "dr1")
		eventually(t, 10*time.Second, "worker saw the new epoch", func() error {
			ws, err := dWorkerState(t, w.Address)
			if err != nil {
				return err
			}
			if ws.Epoch != after.Epoch {
				return fmt.Errorf("worker's epoch %d, want %d", ws.Epoch, after.Epoch)
			}
			return nil
		})
		stale := []struct {
			name, path string
			body       any
		}{
			{"launch executor", "/v1/executors", wire.LaunchExecutor{
				Epoch: epoch0, MasterURL: cl.m.url, AppID: "app-stale", ExecutorID: 0,
				Cores: 1, MemoryMB: 64, Command: dSleep(staleMarker),
			}},
			{"launch driver", "/v1/drivers", wire.LaunchDriver{
				Epoch: epoch0, MasterURL: cl.m.url, DriverID: "driver-stale", Cores: 1, MemoryMB: 64, Command: dSleep(staleMarker),
			}},
			// Destructive commands about what runs: refused, nothing dies.
			{"app finished", "/v1/apps/finished", wire.ApplicationFinished{Epoch: epoch0, AppID: appID}},
			{"kill driver", "/v1/drivers/kill", wire.KillDriver{Epoch: epoch0, DriverID: driverID}},
		}
		for _, c := range stale {
			r, err := dRaw(http.MethodPost, w.Address+c.path, secret, dJSON(t, c.body))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var se wire.StaleEpoch
			if r.status != http.StatusConflict || json.Unmarshal([]byte(r.body), &se) != nil || se.Epoch != after.Epoch || se.Error == "" {
				t.Errorf("%s with stale epoch %d: %d %s; want 409 with the worker's epoch %d", c.name, epoch0, r.status, r.body, after.Epoch)
			}
		}
		dStable(t, time.Second, "nothing done on stale commands", func() error {
			if pids := pidsOf(staleMarker); len(pids) != 0 {
				return fmt.Errorf("a stale launch started processes %v", pids)
			}
			if !dSamePids(pidsOf(execMarker), execPids) || !dSamePids(pidsOf(driverMarker), driverPids) {
				return fmt.Errorf("a stale kill changed the processes: executors %v (were %v), driver %v (was %v)",
					pidsOf(execMarker), execPids, pidsOf(driverMarker), driverPids)
			}
			return nil
		})
		ws, err := dWorkerState(t, w.Address)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ws.Executors {
			if e.AppID == "app-stale" {
				t.Errorf("the worker records the stale launch: %+v", e)
			}
		}
		// The current epoch is accepted (a harmless command: an app the
		// worker never ran has finished).
		r, err := dRaw(http.MethodPost, w.Address+"/v1/apps/finished", secret,
			dJSON(t, wire.ApplicationFinished{Epoch: after.Epoch, AppID: "app-never-ran"}))
		if err != nil || r.status != http.StatusOK {
			t.Errorf("app finished with the current epoch: %d %s %v; want 200", r.status, r.body, err)
		}
	})
}

// mustStatusEventually waits until cond holds for the leader's status.
func (cl *dCluster) mustStatusEventually(t *testing.T, timeout time.Duration, what string, cond func(wire.ClusterStatus) error) wire.ClusterStatus {
	t.Helper()
	var st wire.ClusterStatus
	eventually(t, timeout, what, func() error {
		var err error
		if st, err = cl.status(t); err != nil {
			return err
		}
		return cond(st)
	})
	return st
}

// TestDaemonsExecutorsThatCannotStartFailApp pins SPARK-27510 for a command
// that cannot even start: the app ends FAILED after --max-executor-retries
// failures in a row, and no executor is launched after that.
func TestDaemonsExecutorsThatCannotStartFailApp(t *testing.T) {
	t.Parallel()
	dFailingExecutorsFailApp(t, []string{"/nonexistent-berth-e2e/no-such-program"}, 0)
}

// TestDaemonsExecutorsExitingNonZeroFailApp pins SPARK-27510 for a command
// that starts and exits non-zero at once: the worker reports it RUNNING for
// a moment every time, which must not reset the app's failure count (only an
// executor that stays RUNNING does), so the app ends FAILED after
// --max-executor-retries failures in a row, with no launch after that.
func TestDaemonsExecutorsExitingNonZeroFailApp(t *testing.T) {
	t.Parallel()
	dFailingExecutorsFailApp(t, []string{"sh", "-c", "exit 3"}, 3)
}

// dFailingExecutorsFailApp runs an app whose executors run command, which
// fails every time (with exitCode, unless 0), and checks that the app ends
// FAILED after exactly --max-executor-retries launches, with no launch after.
func dFailingExecutorsFailApp(t *testing.T, command []string, exitCode int) {
	const retries = 3
	cl := dStartCluster(t, []string{"--max-executor-retries", fmt.Sprint(retries)}, 2, "df1")
	appID, err := cl.c.RegisterApp(dCtx(t, 20*time.Second), wire.AppDescription{
		Name: "always-fails", Command: command, MaxCores: 1, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	events := dFollow(t, cl.c, appID)

	a := cl.app(t, appID, 20*time.Second, "app FAILED", func(a wire.AppStatus) error {
		if len(a.Executors) > retries {
			t.Fatalf("app %s launched %d executors without failing, more than --max-executor-retries %d: %s",
				a.State, len(a.Executors), retries, dExecs(a))
		}
		if a.State != wire.AppFailed {
			return fmt.Errorf("want FAILED")
		}
		return nil
	})
	if len(a.Executors) != retries {
		t.Errorf("app ran %d executors %s, want exactly --max-executor-retries %d", len(a.Executors), dExecs(a), retries)
	}
	for _, e := range a.Executors {
		if e.State != wire.ExecutorFailed || (exitCode != 0 && (e.ExitCode == nil || *e.ExitCode != exitCode)) {
			t.Errorf("executor %d: %s exit %v (%s), want FAILED with exit code %d", e.ID, e.State, e.ExitCode, e.Message, exitCode)
		}
	}
	events.waitFor(t, 10*time.Second, "appRemoved FAILED on the app's stream", func(evs []wire.AppEvent) error {
		for _, ev := range evs {
			if ev.Type == wire.EventAppRemoved {
				if ev.App == nil || ev.App.State != wire.AppFailed {
					return fmt.Errorf("appRemoved with %+v, want the app FAILED", ev.App)
				}
				return nil
			}
		}
		return fmt.Errorf("no appRemoved: %s", dEventTypes(evs))
	})
	// No launch after the app failed: the worker's log of applied
	// launches and the app's executors stop growing.
	launches := func() int {
		n := 0
		for _, l := range cl.workers["df1"].logLines() {
			if strings.Contains(l, "command applied") && strings.Contains(l, "launch executor") {
				n++
			}
		}
		return n
	}
	dStable(t, 2*time.Second, "no executor launched after the app FAILED", func() error {
		if n := launches(); n != retries {
			return fmt.Errorf("the worker applied %d executor launches, want %d", n, retries)
		}
		st, err := cl.status(t)
		if err != nil {
			return err
		}
		if a, _ := appStatus(st, appID); a.State != wire.AppFailed || len(a.Executors) != retries {
			return fmt.Errorf("app now %s with executors %s", a.State, dExecs(a))
		}
		if w, _ := dWorker(st, "df1"); w.CoresUsed != 0 {
			return fmt.Errorf("worker still has %d cores in use", w.CoresUsed)
		}
		return nil
	})
}

// TestDaemonsUnknownExecutorsKilled pins SPARK-13604: a worker that reports
// executors the master does not know has them killed. A master without
// durable state (--recovery-mode none) is restarted under a running app:
// the workers register with it again and report their executors, which it
// cannot account for, so they die.
func TestDaemonsUnknownExecutorsKilled(t *testing.T) {
	t.Parallel()
	marker := dMarker(t)
	cl := dStartCluster(t, []string{"--recovery-mode", "none"}, 2, "du1", "du2")
	appID, err := cl.c.RegisterApp(dCtx(t, 20*time.Second), wire.AppDescription{
		Name: "forgotten", Command: dSleep(marker), MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	dFollow(t, cl.c, appID)
	cl.app(t, appID, 20*time.Second, "app RUNNING with 2 executors", func(a wire.AppStatus) error {
		if len(executorsIn(a, wire.ExecutorRunning)) != 2 {
			return fmt.Errorf("want 2 RUNNING executors")
		}
		return nil
	})
	eventually(t, 10*time.Second, "executor processes started", func() error {
		if n := len(pidsOf(marker)); n != 2 {
			return fmt.Errorf("%d processes, want 2", n)
		}
		return nil
	})

	if err := cl.m.stop(10 * time.Second); err != nil {
		t.Fatalf("master did not exit cleanly on SIGTERM: %v", err)
	}
	cl.m.restart(t)

	eventually(t, 20*time.Second, "executors unknown to the new master killed", func() error {
		if pids := pidsOf(marker); len(pids) != 0 {
			return fmt.Errorf("executor processes %v still run", pids)
		}
		return nil
	})
	st := aliveWorkers(t, cl.c, 2, 10*time.Second)
	if len(st.ActiveApps) != 0 {
		t.Errorf("the master without state lists apps %+v", st.ActiveApps)
	}
	for _, w := range st.Workers {
		eventually(t, 10*time.Second, "worker "+w.ID+" runs nothing", func() error {
			ws, err := dWorkerState(t, w.Address)
			if err != nil {
				return err
			}
			if len(ws.Executors) != 0 {
				return fmt.Errorf("worker %s still runs %+v", w.ID, ws.Executors)
			}
			return nil
		})
	}
	for _, id := range []string{"du1", "du2"} {
		if !cl.workers[id].logContains(`master is killing what it does not know`) {
			t.Errorf("worker %s's log does not show the master killing unknown executors", id)
		}
	}
}
