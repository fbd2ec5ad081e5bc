package e2e

// What the daemons do across a master restart (see daemons_test.go).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestDaemonsMasterRestartRecoversEverything pins the master's recovery from
// its --data-dir after a restart: apps, drivers and workers come back, the
// workers register again, the executors and the driver keep running
// untouched (the very same processes), the app's client (an event stream
// that reconnects by itself) gets masterChanged and its app stays RUNNING
// with the same executors, and the epoch grew. Then (stale epoch) a worker
// refuses commands carrying the epoch of the master before the restart.
func TestDaemonsMasterRestartRecoversEverything(t *testing.T) {
	t.Parallel()
	execMarker, driverMarker, staleMarker := newMarker(t), newMarker(t), newMarker(t)
	cl := daemonCluster(t, []string{"--recovery-timeout", "3s"}, 2, "dr1", "dr2")

	driverID, err := cl.c.SubmitDriver(callCtx(t, 20*time.Second), wire.DriverDescription{Command: sleepArgs(driverMarker), Cores: 1, MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	appID, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{
		Name: "survivor", Command: sleepArgs(execMarker), MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	events := followEvents(t, cl.c, appID)
	before := cl.appWhen(appID, 20*time.Second, "app RUNNING with 2 executors", func(a wire.AppStatus) error {
		if a.State != wire.AppRunning || len(executorsIn(a, wire.ExecutorRunning)) != 2 {
			return fmt.Errorf("want RUNNING with 2 RUNNING executors")
		}
		return nil
	})
	driverBefore := cl.driverWhen(driverID, 15*time.Second, "driver RUNNING", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRunning {
			return fmt.Errorf("want RUNNING")
		}
		return nil
	})
	var execPids, driverPids []int
	testproc.Eventually(t, 10*time.Second, "processes started", func() error {
		execPids, driverPids = pidsOf(execMarker), pidsOf(driverMarker)
		if len(execPids) != 2 || len(driverPids) != 1 {
			return fmt.Errorf("%d executor and %d driver processes, want 2 and 1", len(execPids), len(driverPids))
		}
		return nil
	})
	st0 := cl.mustStatus()
	epoch0 := st0.Epoch

	if err := stop(t, cl.master("m1").Proc(), 10*time.Second); err != nil {
		t.Fatalf("master did not exit cleanly on SIGTERM: %v", err)
	}
	// A master's death kills nothing.
	if !samePids(pidsOf(execMarker), execPids) || !samePids(pidsOf(driverMarker), driverPids) {
		t.Fatalf("processes changed while the master was down: executors %v (were %v), driver %v (was %v)",
			pidsOf(execMarker), execPids, pidsOf(driverMarker), driverPids)
	}
	cl.restart(cl.master("m1"))

	after := cl.statusWhen(20*time.Second, "cluster recovered", func(st wire.ClusterStatus) error {
		if st.Epoch <= epoch0 {
			return fmt.Errorf("epoch %d, want more than %d", st.Epoch, epoch0)
		}
		for _, id := range []string{"dr1", "dr2"} {
			if w, ok := workerIn(st, id); !ok || w.State != wire.WorkerAlive {
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
		if got, want := describeExecs(a), describeExecs(before); got != want {
			return fmt.Errorf("app executors %s, want the same as before %s", got, want)
		}
		if len(st.ActiveDrivers) != 1 || st.ActiveDrivers[0].ID != driverID || st.ActiveDrivers[0].State != wire.DriverRunning ||
			st.ActiveDrivers[0].WorkerID != driverBefore.WorkerID {
			return fmt.Errorf("active drivers %+v, want %s RUNNING on %s", st.ActiveDrivers, driverID, driverBefore.WorkerID)
		}
		return nil
	})
	events.waitFor(t, 10*time.Second, "masterChanged on the app's stream", func(evs []appEvent) error {
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
				return fmt.Errorf("no snapshot after masterChanged: %s", eventTypes(evs))
			}
		}
		return fmt.Errorf("no masterChanged: %s", eventTypes(evs))
	})
	for _, ev := range events.all() {
		if ev.Type == wire.EventExecutorLost || ev.Type == wire.EventAppRemoved {
			t.Errorf("the app's client got %s (%s) across the restart", ev.Type, ev.Message)
		}
	}
	// Each worker registered again (once with the first master, once or
	// more with the restarted one), under the same id.
	for _, id := range []string{"dr1", "dr2"} {
		if n := logCount(cl.worker(id).Proc, `registered with master`); n < 2 {
			t.Errorf("worker %s registered %d times, want again after the restart", id, n)
		}
	}
	// The same processes, never restarted.
	if !samePids(pidsOf(execMarker), execPids) || !samePids(pidsOf(driverMarker), driverPids) {
		t.Fatalf("processes changed across the restart: executors %v (were %v), driver %v (was %v)",
			pidsOf(execMarker), execPids, pidsOf(driverMarker), driverPids)
	}

	// Stale epoch: a command carrying the old master's epoch is refused
	// (409) by a worker that has seen the new one, and does nothing.
	t.Run("StaleEpochRefusedByWorker", func(t *testing.T) {
		w, _ := workerIn(after, "dr1")
		testproc.Eventually(t, 10*time.Second, "worker saw the new epoch", func() error {
			ws, err := workerState(w.Address)
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
				Epoch: epoch0, MasterURL: cl.master("m1").URL, AppID: "app-stale", ExecutorID: 0,
				Process: wire.Process{Command: sleepArgs(staleMarker), Cores: 1, MemoryMB: 64},
			}},
			{"launch driver", "/v1/drivers", wire.LaunchDriver{
				Epoch: epoch0, MasterURL: cl.master("m1").URL, DriverID: "driver-stale",
				Process: wire.Process{Command: sleepArgs(staleMarker), Cores: 1, MemoryMB: 64},
			}},
			// Destructive commands about what runs: refused, nothing dies.
			{"app finished", "/v1/apps/finished", wire.ApplicationFinished{Epoch: epoch0, AppID: appID}},
			{"kill driver", "/v1/drivers/kill", wire.KillDriver{Epoch: epoch0, DriverID: driverID}},
		}
		for _, c := range stale {
			r, err := call(http.MethodPost, w.Address+c.path, secret, jsonOf(t, c.body))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var se wire.StaleEpoch
			if r.status != http.StatusConflict || json.Unmarshal([]byte(r.body), &se) != nil || se.Epoch != after.Epoch || se.Error == "" {
				t.Errorf("%s with stale epoch %d: %d %s; want 409 with the worker's epoch %d", c.name, epoch0, r.status, r.body, after.Epoch)
			}
		}
		testproc.Stable(t, time.Second, "nothing done on stale commands", func() error {
			if pids := pidsOf(staleMarker); len(pids) != 0 {
				return fmt.Errorf("a stale launch started processes %v", pids)
			}
			if !samePids(pidsOf(execMarker), execPids) || !samePids(pidsOf(driverMarker), driverPids) {
				return fmt.Errorf("a stale kill changed the processes: executors %v (were %v), driver %v (was %v)",
					pidsOf(execMarker), execPids, pidsOf(driverMarker), driverPids)
			}
			return nil
		})
		ws, err := workerState(w.Address)
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
		r, err := call(http.MethodPost, w.Address+"/v1/apps/finished", secret,
			jsonOf(t, wire.ApplicationFinished{Epoch: after.Epoch, AppID: "app-never-ran"}))
		if err != nil || r.status != http.StatusOK {
			t.Errorf("app finished with the current epoch: %d %s %v; want 200", r.status, r.body, err)
		}
	})
}

// TestDaemonsUnknownExecutorsKilled pins SPARK-13604: a worker that reports
// executors the master does not know has them killed. A master without
// durable state (--recovery-mode none) is restarted under a running app:
// the workers register with it again and report their executors, which it
// cannot account for, so they die.
func TestDaemonsUnknownExecutorsKilled(t *testing.T) {
	t.Parallel()
	marker := newMarker(t)
	cl := daemonCluster(t, []string{"--recovery-mode", "none"}, 2, "du1", "du2")
	appID, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{
		Name: "forgotten", Command: sleepArgs(marker), MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, appID)
	cl.appWhen(appID, 20*time.Second, "app RUNNING with 2 executors", func(a wire.AppStatus) error {
		if len(executorsIn(a, wire.ExecutorRunning)) != 2 {
			return fmt.Errorf("want 2 RUNNING executors")
		}
		return nil
	})
	testproc.Eventually(t, 10*time.Second, "executor processes started", func() error {
		if n := len(pidsOf(marker)); n != 2 {
			return fmt.Errorf("%d processes, want 2", n)
		}
		return nil
	})

	if err := stop(t, cl.master("m1").Proc(), 10*time.Second); err != nil {
		t.Fatalf("master did not exit cleanly on SIGTERM: %v", err)
	}
	cl.restart(cl.master("m1"))

	testproc.Eventually(t, 20*time.Second, "executors unknown to the new master killed", func() error {
		if pids := pidsOf(marker); len(pids) != 0 {
			return fmt.Errorf("executor processes %v still run", pids)
		}
		return nil
	})
	st := cl.waitWorkers(10*time.Second, "du1", "du2")
	if len(st.ActiveApps) != 0 {
		t.Errorf("the master without state lists apps %+v", st.ActiveApps)
	}
	for _, w := range st.Workers {
		testproc.Eventually(t, 10*time.Second, "worker "+w.ID+" runs nothing", func() error {
			ws, err := workerState(w.Address)
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
		if logCount(cl.worker(id).Proc, `master is killing what it does not know`) == 0 {
			t.Errorf("worker %s's log does not show the master killing unknown executors", id)
		}
	}
}
