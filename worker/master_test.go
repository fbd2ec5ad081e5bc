package worker

import (
	"fmt"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

func TestRegistrationThenLatestStateThenHeartbeats(t *testing.T) {
	fm, w := startParallel(t, nil)
	testproc.Eventually(t, 5*time.Second, "heartbeats", func() bool { return fm.count("heartbeat") >= 2 })

	calls := fm.callLog()
	if calls[0] != "register" || calls[1] != "state" || calls[2] != "heartbeat" {
		t.Fatalf("calls %v: want register, state, then heartbeats", calls)
	}
	var reg wire.RegisterWorker
	fm.with(func() { reg = fm.registrations[0] })
	_, port, _ := httpx.SplitHostPort(w.URL()[len("http://"):])
	want := wire.RegisterWorker{ID: w.ID(), Host: "127.0.0.1", Port: port, Cores: 4, MemoryMB: 4096,
		Address: fmt.Sprintf("http://127.0.0.1:%d", port), Incarnation: reg.Incarnation, Limits: w.limits, PortRange: &wire.PortRange{First: 20000, Last: 20999}} // the host's first block
	if !reflect.DeepEqual(reg, want) || len(reg.Incarnation) < 16 {
		t.Errorf("registration %+v, want %+v with a random incarnation", reg, want)
	}
	if !regexp.MustCompile(fmt.Sprintf(`^worker-\d{14}-127\.0\.0\.1-%d$`, port)).MatchString(w.ID()) {
		t.Errorf("id %q is not Spark-style worker-<time>-<host>-<port>", w.ID())
	}
	st, _ := fm.lastState()
	if st.WorkerID != w.ID() || len(st.Executors) != 0 || len(st.Drivers) != 0 {
		t.Errorf("latest state %+v", st)
	}
	// The worker learned the master's epoch and says where it is registered.
	if got := w.state(); got.Epoch != 5 || got.Master != fm.URL() {
		t.Errorf("GET /v1/state: epoch %d master %q", got.Epoch, got.Master)
	}
}

func TestHeartbeatsAtTheInterval(t *testing.T) {
	t.Parallel()
	fm := newFakeMaster(t)
	fm.intervalMs = 150
	startWorker(t, []string{fm.URL()}, nil)
	fm.waitRegistered(t)
	testproc.Eventually(t, 10*time.Second, "11 heartbeats", func() bool { return fm.count("heartbeat") >= 11 })
	var beats []time.Time
	fm.with(func() { beats = append(beats, fm.heartbeats[:11]...) })
	// Single gaps vary with each request's latency; their mean must not.
	// Each wait is 90-100% of the interval (a mean of 142 ms), timed from
	// the previous beat's start, so only the arrival latency of the first
	// and last beats moves the mean: over ten gaps a first beat delayed
	// 200 ms by a loaded machine still leaves it above 120 ms, which a
	// worker that kept the fake master's 100 ms default would not reach.
	mean := beats[len(beats)-1].Sub(beats[0]) / time.Duration(len(beats)-1)
	if mean < 120*time.Millisecond || mean > 600*time.Millisecond {
		t.Errorf("mean gap between heartbeats %v, interval 150ms", mean)
	}
}

func TestRegistrationRetriesAndFollowsTheLeader(t *testing.T) {
	t.Parallel()
	leader := newFakeMaster(t)
	follower := newFakeMaster(t)
	follower.onRegister = func(n int) error {
		if n <= 2 { // no leader yet
			return &httpx.StatusError{Status: 503, Message: "no leader"}
		}
		return &httpx.StatusError{Status: 307, Message: "not the leader", Leader: leader.URL()}
	}
	w := startWorker(t, []string{testproc.ClosedURL(t), follower.URL()}, nil)
	leader.waitRegistered(t)
	if n := follower.count("register"); n != 3 {
		t.Errorf("follower saw %d registrations, want 3 (503, 503, 307)", n)
	}
	testproc.Eventually(t, 5*time.Second, "heartbeats to the leader", func() bool { return leader.count("heartbeat") > 0 })
	if follower.count("heartbeat") != 0 {
		t.Error("heartbeats went to the follower")
	}
	if m := w.state().Master; m != leader.URL() {
		t.Errorf("registered with %q, want the leader %q", m, leader.URL())
	}
}

func TestRegistrationRefusalsAreRetried(t *testing.T) {
	t.Parallel()
	fm := newFakeMaster(t)
	fm.onRegister = func(n int) error {
		switch n {
		case 1:
			return &httpx.StatusError{Status: 401, Message: "missing or wrong secret"}
		case 2:
			return &httpx.StatusError{Status: 409, Message: "a worker is already registered at this address"}
		}
		return nil
	}
	startWorker(t, []string{fm.URL()}, nil)
	fm.waitRegistered(t)
	if n := fm.count("register"); n != 3 {
		t.Errorf("%d registrations, want 3", n)
	}
}

func TestReconnectReplyRegistersAgainKeepingChildren(t *testing.T) {
	fm, w := startParallel(t, nil)
	pid := w.runSleeper("app-1", 0)
	testproc.Eventually(t, 5*time.Second, "a heartbeat counting the executor", func() bool {
		var hb wire.Heartbeat
		fm.with(func() { hb = fm.lastBeat })
		return reflect.DeepEqual(hb, wire.Heartbeat{CoresUsed: 1, MemoryUsedMB: 256})
	})

	fm.with(func() {
		once := true
		fm.onHeartbeat = func() (bool, error) {
			r := once
			once = false
			return r, nil
		}
	})
	testproc.Eventually(t, 10*time.Second, "a second registration", func() bool { return fm.count("state") >= 2 })
	var regs []wire.RegisterWorker
	fm.with(func() { regs = append(regs, fm.registrations...) })
	if regs[1].ID != regs[0].ID {
		t.Errorf("registered again as %q, was %q", regs[1].ID, regs[0].ID)
	}
	st, _ := fm.lastState()
	if len(st.Executors) != 1 || !reflect.DeepEqual(st.Executors[0], wire.ExecutorReport{AppID: "app-1", ExecutorID: 0, Cores: 1, MemoryMB: 256, State: wire.ExecutorRunning}) {
		t.Errorf("latest state after re-registration: %+v", st.Executors)
	}
	if !testproc.Alive(pid) {
		t.Error("the executor died with the re-registration")
	}
}

// A master that stops answering makes the worker find the new leader; its
// children keep running and are in the state it sends there.
func TestFailoverKeepsChildren(t *testing.T) {
	t.Parallel()
	old := newFakeMaster(t)
	next := newFakeMaster(t)
	next.epoch = 9
	w := startWorker(t, []string{old.URL(), next.URL()}, nil)
	old.waitRegistered(t)
	pid := w.runSleeper("app-1", 3)
	testproc.Eventually(t, 5*time.Second, "RUNNING at the old master", func() bool { return len(old.execReports("app-1", 3)) == 1 })

	old.srv.CloseClientConnections()
	old.srv.Close() // the old leader dies
	next.waitRegistered(t)
	st, _ := next.lastState()
	if len(st.Executors) != 1 || st.Executors[0].ExecutorID != 3 {
		t.Errorf("state sent to the new leader: %+v", st)
	}
	if !testproc.Alive(pid) {
		t.Error("the executor died with the master")
	}
	testproc.Eventually(t, 5*time.Second, "the new epoch", func() bool { return w.state().Epoch == 9 })

	// Reports now go to the new leader.
	w.mustCall(200, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 9, AppID: "app-1", ExecutorID: 3})
	reps := next.waitFinal(t, "app-1", 3)
	if reps[len(reps)-1].State != wire.ExecutorKilled {
		t.Errorf("reports at the new leader: %v", execStateNames(reps))
	}
}

func TestReconnectCommand(t *testing.T) {
	t.Parallel()
	first := newFakeMaster(t)
	second := newFakeMaster(t)
	second.epoch = 6
	w := startWorker(t, []string{first.URL()}, nil)
	first.waitRegistered(t)
	w.mustCall(200, "POST", "/v1/reconnect", wire.Reconnect{Epoch: 6, Master: second.URL()})
	second.waitRegistered(t)
	testproc.Eventually(t, 5*time.Second, "GET /v1/state naming the new master", func() bool { return w.state().Master == second.URL() })
	// Stale: the old master's epoch.
	w.mustCall(409, "POST", "/v1/reconnect", wire.Reconnect{Epoch: 5, Master: first.URL()})
	w.mustCall(400, "POST", "/v1/reconnect", wire.Reconnect{Epoch: 6, Master: "ftp://x"})
}

func TestUnknownWorkerReportMakesItRegisterAgain(t *testing.T) {
	fm, w := startParallel(t, nil)
	refused := 0
	fm.with(func() {
		fm.onExecState = func(s wire.ExecutorStateChanged) error {
			switch {
			case s.AppID == "app-gone":
				return &httpx.StatusError{Status: 404, Code: wire.CodeUnknownApp, Message: "unknown app app-gone"}
			case refused == 0:
				refused++
				return &httpx.StatusError{Status: 404, Code: wire.CodeUnknownWorker, Message: "unknown worker " + w.ID()}
			}
			return nil
		}
	})
	// The first report meets unknown_worker: register again, then deliver.
	w.launchExecutor("app-1", 0, helperCmd(t, "exit", "0"))
	reps := fm.waitFinal(t, "app-1", 0)
	if got := execStateNames(reps); len(got) != 2 || got[0] != "RUNNING" || got[1] != "EXITED" {
		t.Errorf("reports %v, want RUNNING, EXITED", got)
	}
	if n := fm.count("register"); n != 2 {
		t.Errorf("%d registrations, want 2", n)
	}
	// Reports the master cannot apply are dropped; the next ones go through.
	w.launchExecutor("app-gone", 0, helperCmd(t, "exit", "0"))
	w.launchExecutor("app-2", 0, helperCmd(t, "exit", "0"))
	fm.waitFinal(t, "app-2", 0)
	if n := len(fm.execReports("app-gone", 0)); n != 0 {
		t.Errorf("%d reports of app-gone accepted", n)
	}
}

// Reports wait, in order, while the master does not take them.
func TestReportsAreDeliveredInOrderAfterAnOutage(t *testing.T) {
	fm, w := startParallel(t, nil)
	fm.with(func() {
		fm.onExecState = func(wire.ExecutorStateChanged) error {
			return &httpx.StatusError{Status: 503, Message: "busy"}
		}
	})
	w.launchExecutor("app-1", 0, helperCmd(t, "exit", "0"))
	w.launchExecutor("app-1", 1, helperCmd(t, "exit", "4"))
	// Ended, and not acknowledged: the latest state lists them as such, so
	// that a new leader would learn of the ends with everything else.
	testproc.Eventually(t, 10*time.Second, "both executors ended, unacknowledged", func() bool {
		ended := map[int]wire.ExecutorReport{} // they may end in either order
		for _, e := range w.state().Executors {
			ended[e.ExecutorID] = e
		}
		e0, e1 := ended[0], ended[1]
		return len(ended) == 2 && e0.State == wire.ExecutorExited && e1.State == wire.ExecutorFailed && e1.ExitCode != nil && *e1.ExitCode == 4
	})
	testproc.Eventually(t, 10*time.Second, "retries", func() bool { return fm.count("executor-state") >= 3 })
	fm.with(func() { fm.onExecState = nil })
	fm.waitFinal(t, "app-1", 0)
	fm.waitFinal(t, "app-1", 1)
	testproc.Eventually(t, 10*time.Second, "acknowledged ends to leave the state", func() bool { return len(w.state().Executors) == 0 })
	for _, id := range []int{0, 1} {
		if got := execStateNames(fm.execReports("app-1", id)); len(got) != 2 || got[0] != "RUNNING" {
			t.Errorf("executor %d: reports %v, want RUNNING then a final state", id, got)
		}
	}
}

// A master that froze (SIGSTOP: it accepts connections and never answers)
// holds a heartbeat until its timeout. A new leader's reconnect must not
// wait for that: the worker drops the request in flight and registers with
// the new leader at once.
func TestReconnectCancelsHeartbeatToFrozenMaster(t *testing.T) {
	t.Parallel()
	frozen := newFakeMaster(t)
	next := newFakeMaster(t)
	next.epoch = 9
	thaw := make(chan struct{})
	defer close(thaw)
	inFlight := make(chan struct{}, 1)
	w := startWorker(t, []string{frozen.URL()}, func(c *Config) { c.RequestTimeout = 30 * time.Second })
	frozen.waitRegistered(t)
	frozen.with(func() {
		frozen.onHeartbeat = func() (bool, error) {
			select {
			case inFlight <- struct{}{}:
			default:
			}
			<-thaw // frozen: never answers while the test runs
			return false, nil
		}
	})
	testproc.Receive(t, inFlight, 5*time.Second, "a heartbeat to reach the master")
	start := time.Now()
	w.mustCall(200, "POST", "/v1/reconnect", wire.Reconnect{Epoch: 9, Master: next.URL()})
	next.waitRegistered(t)
	if took := time.Since(start); took > heartbeatTimeout*3/4 {
		t.Fatalf("registered with the new leader %v after its reconnect: the heartbeat to the frozen master held it", took)
	}
}

// A heartbeat reply naming another interval (the master's fleet grew or
// shrank) changes the pace of the heartbeats that follow.
func TestHeartbeatReplyChangesTheInterval(t *testing.T) {
	t.Parallel()
	fm := newFakeMaster(t)
	fm.with(func() { fm.intervalMs, fm.beatIntervalMs = 500, 20 })
	startWorker(t, []string{fm.URL()}, nil)
	testproc.Eventually(t, 5*time.Second, "the first heartbeat", func() bool { return fm.count("heartbeat") >= 1 })
	first := time.Now()
	testproc.Eventually(t, 5*time.Second, "ten more heartbeats", func() bool { return fm.count("heartbeat") >= 11 })
	if took := time.Since(first); took > 2*time.Second {
		t.Errorf("ten heartbeats took %s: the 20 ms the master asked for was not taken", took)
	}
}
