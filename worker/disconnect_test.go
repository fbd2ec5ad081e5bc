package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// A process that asked for stopAfterDisconnect is stopped once no master
// has accepted anything from its worker that long, and not before; one
// that asked nothing runs on; in touch again, the worker reports the stop:
// the executor LOST, the (supervised) driver out of touch, not restarted
// here.
func TestStopAfterDisconnect(t *testing.T) {
	fm, w := startParallel(t, nil)
	const after = time.Second
	stopping := launchOf("app-stop", 0, helperCmd(t, "sleep"), nil)
	stopping.StopAfterDisconnect = wire.Duration(after)
	w.mustCall(200, "POST", "/v1/executors", stopping)
	stopPid := w.runningPid("app-stop", 0)
	keptPid := w.runSleeper("app-keep", 0)
	driver := driverLaunchOf("driver-stop", true, helperCmd(t, "sleep"))
	driver.StopAfterDisconnect = wire.Duration(after)
	w.mustCall(200, "POST", "/v1/drivers", driver)
	driverPid := pidOf(t, w.Config().WorkDir+"/"+driversDir+"/driver-stop")

	// In touch for longer than the setting: nothing stops.
	beats := fm.count("heartbeat")
	testproc.Eventually(t, 10*time.Second, "heartbeats for longer than stopAfterDisconnect", func() bool {
		return fm.count("heartbeat") >= beats+int(2*after/(100*time.Millisecond))
	})
	for _, pid := range []int{stopPid, keptPid, driverPid} {
		if !testproc.Alive(pid) {
			t.Fatalf("pid %d stopped while its worker was in touch with the master", pid)
		}
	}

	// Out of touch: every heartbeat and registration refused.
	refuse := &httpx.StatusError{Status: 503, Message: "no leader"}
	cut := time.Now()
	fm.with(func() {
		fm.onHeartbeat = func() (bool, error) { return false, refuse }
		fm.onRegister = func(int) error { return refuse }
	})
	var stopped time.Duration
	testproc.Eventually(t, 10*time.Second, "the executor stopped", func() bool {
		stopped = time.Since(cut)
		return !testproc.Alive(stopPid)
	})
	// The last heartbeat accepted was at most one interval (100 ms) before
	// the cut; the worker looks every 250 ms.
	if stopped < after-150*time.Millisecond {
		t.Errorf("stopped %s after the master stopped answering, before its stopAfterDisconnect of %s", stopped, after)
	}
	testproc.Eventually(t, 5*time.Second, "the driver stopped", func() bool { return !testproc.Alive(driverPid) })
	if !testproc.Alive(keptPid) {
		t.Error("an executor without stopAfterDisconnect was stopped")
	}

	// In touch again: the stops are reported, the other runs on.
	fm.with(func() { fm.onHeartbeat, fm.onRegister = nil, nil })
	reps := fm.waitFinal(t, "app-stop", 0)
	last := reps[len(reps)-1]
	if last.State != wire.ExecutorLost || !strings.HasPrefix(last.Message, "stopped: out of touch with every master for") {
		t.Errorf("the stopped executor ended %s %q, want LOST saying why", last.State, last.Message)
	}
	dreps := fm.waitDriverFinal(t, "driver-stop")
	if dlast := dreps[len(dreps)-1]; !dlast.OutOfTouch || !strings.HasPrefix(dlast.Message, "stopped: out of touch") {
		t.Errorf("the supervised driver's end %+v does not say it was stopped out of touch (the master relaunches it)", dlast)
	}
	if n := len(dreps); n != 2 {
		t.Errorf("the supervised driver was reported %d times (%+v): its worker restarted it", n, dreps)
	}
	if !testproc.Alive(keptPid) {
		t.Error("an executor without stopAfterDisconnect was stopped")
	}
}
