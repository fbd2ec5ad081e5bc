package master

import (
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// diskFullRefusal is a worker's answer to a launch while its work dir is
// full.
var diskFullRefusal = &httpx.StatusError{Status: 507, Code: wire.CodeDiskFull, Message: "not started: work dir /w: 3 MiB free, below --min-free-disk 64 MiB"}

// refuseTheLaunch commits what is pending, has the worker of the one
// launch sent to path refuse it for a full disk, commits again, and
// returns that worker.
func refuseTheLaunch(h *harness, path string) string {
	h.t.Helper()
	h.commit()
	sent := h.takeSent(path)
	if len(sent) != 1 {
		h.t.Fatalf("%d launches sent to %s", len(sent), path)
	}
	h.c.commandFailed(sent[0].worker, sent[0].cmd, diskFullRefusal)
	h.commit()
	return sent[0].worker
}

// A driver whose launch its worker refused for a full disk (it filled
// before the heartbeat said so) waits again and is placed on another
// worker: never ERROR for a disk it did not fill. The worker takes nothing
// new until it says space is back.
func TestDriverLaunchRefusedForDiskWaitsAgain(t *testing.T) {
	h := newLeader(t, nil, "w1", "w2")
	id := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 256})
	first := refuseTheLaunch(h, wire.WorkerAPI.LaunchDriver.Pattern)
	if w := h.c.workers[first]; w.diskFull == "" || w.placeable() {
		t.Errorf("%s after refusing for its disk: diskFull %q, placeable %v", first, w.diskFull, w.placeable())
	}
	d := h.c.drivers[id]
	if d == nil || d.state != wire.DriverRunning || d.worker == nil || d.worker.rec.ID == first {
		t.Fatalf("the driver after the refusal: %+v, want RUNNING on the other worker", d)
	}
	if again := h.takeSent(wire.WorkerAPI.LaunchDriver.Pattern); len(again) != 1 || again[0].worker == first {
		t.Errorf("launches after the refusal: %+v", again)
	}
	if rec := h.fx.state.Drivers[id]; rec == nil || rec.WorkerID == first || rec.State != wire.DriverRunning {
		t.Errorf("the driver's record: %+v", rec)
	}
	if len(h.c.completedDrivers) != 0 {
		t.Errorf("a driver ended: %+v", h.c.completedDrivers[0].rec)
	}
}

// An executor whose launch was refused for a full disk is replaced on
// another worker, LOST (not FAILED: the app's failures are not counted).
func TestExecutorLaunchRefusedForDiskIsReplaced(t *testing.T) {
	h := newLeader(t, nil, "w1", "w2")
	a := h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 64})
	first := refuseTheLaunch(h, wire.WorkerAPI.LaunchExecutor.Pattern)
	st := appStatus(a)
	var lost, live int
	for _, e := range st.Executors {
		switch {
		case e.State == wire.ExecutorLost && e.WorkerID == first:
			lost++
			if e.Message != diskFullRefusal.Message {
				t.Errorf("the LOST executor says %q, want the worker's %q", e.Message, diskFullRefusal.Message)
			}
		case !e.State.Finished() && e.WorkerID != first:
			live++
		}
	}
	if lost != 1 || live != 1 {
		t.Errorf("executors after the refusal: %+v, want one LOST on %s and one on the other worker", st.Executors, first)
	}
	if len(a.failures) != 0 {
		t.Errorf("the app counts %d failures", len(a.failures))
	}
	if a.state != wire.AppRunning && a.state != wire.AppWaiting {
		t.Errorf("the app is %s", a.state)
	}
}
