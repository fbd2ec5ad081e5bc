package master

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

func wdur(d time.Duration) *wire.Duration { v := wire.Duration(d); return &v }

// Ports are given with the placement, one per label, never two at once on
// a worker, written with the placement and freed when the executor ends;
// a new leader keeps them taken.
func TestPortsGivenWithThePlacement(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	desc := oneCoreApp("default", 0)
	desc.Ports = []string{"http", "admin"}
	a := h.addApp(desc)
	if len(a.executors) != 4 {
		t.Fatalf("%d executors, want 4", len(a.executors))
	}
	seen := map[int]bool{}
	for _, e := range sortedExecutors(a.executors) {
		if len(e.ports) != 2 {
			t.Fatalf("executor %d has ports %v, want http and admin", e.id, e.ports)
		}
		for _, p := range e.ports {
			if seen[p] || !wire.DefaultPortRange.Contains(p) {
				t.Errorf("port %d given twice, or outside the range", p)
			}
			seen[p] = true
		}
		if rec := h.fx.state.Executors[persistence.ExecutorKey(a.rec.ID, e.id)]; rec == nil || len(rec.Ports) != 2 {
			t.Errorf("executor %d's record %+v lacks its ports", e.id, rec)
		}
	}
	launches := h.takeSent(wire.WorkerAPI.LaunchExecutor.Pattern)
	if len(launches) != 4 || len(launches[0].cmd.body.(wire.LaunchExecutor).Ports) != 2 {
		t.Errorf("launches %+v do not carry the ports", launches)
	}
	w := h.c.workers["w1"]
	if w.ports.Free() != wire.DefaultPortRange.Size()-8 {
		t.Errorf("%d ports free, want %d", w.ports.Free(), wire.DefaultPortRange.Size()-8)
	}
	h.failover()
	if w := h.c.workers["w1"]; w.ports.Free() != wire.DefaultPortRange.Size()-8 {
		t.Errorf("after a failover %d ports free, want the 8 held", w.ports.Free())
	}
}

// A worker whose range is exhausted takes no process that asks for ports,
// and the app says why.
func TestAnExhaustedPortRangeWaits(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorkerNoCommit("w0") // a worker with the default range, to be removed below
	h.c.workers["w0"].ports = *scheduler.NewPortPool(&wire.PortRange{First: 20000, Last: 20001})
	h.c.touched(h.c.workers["w0"])
	desc := oneCoreApp("default", 0)
	desc.Ports = []string{"http"}
	a := h.addApp(desc)
	if len(a.executors) != 2 {
		t.Fatalf("%d executors on a worker of 2 ports, want 2", len(a.executors))
	}
	st := mustAppStatus(t, h, a.rec.ID)
	if !strings.Contains(st.Waiting, "free ports in its --port-range") {
		t.Errorf("the app waiting for ports says %q", st.Waiting)
	}
}

// An app whose executors fail twice on a worker is kept off it, while
// another worker can take them; the app says so; berth worker clear
// ends it. Apps failing on their own (their exit codes) never make the
// worker unhealthy: one tenant's failing apps benched a worker for every
// tenant. Three apps whose processes the worker itself could not start
// (wire.CauseWorker) do: nothing new goes there until that passes or it
// is cleared.
func TestBadWorkersAvoided(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("bad", 2, 4096)
	cause := wire.CauseProcess
	fail := func(a *appInfo, on string) {
		t.Helper()
		for _, e := range sortedExecutors(a.executors) {
			if e.worker.rec.ID == on {
				h.reportCaused(e, wire.ExecutorFailed, intp(1), cause)
				return
			}
		}
		t.Fatalf("%s has no executor on %s", a.rec.ID, on)
	}
	one := oneCoreApp("default", 0)
	one.MaxCores = 1
	a := h.addApp(one)
	fail(a, "bad")
	h.pass(2*time.Second, "bad") // the relaunch backoff
	fail(a, "bad")
	if v := a.view(); scheduler.Excluding(fleet{h.c}, &v, h.c.now()) {
		t.Fatal("an app kept off its only worker: it would wait for ever instead of failing")
	}
	h.addWorker("good", 2, 4096)
	h.pass(2*time.Second, "bad", "good")
	if len(a.executors) != 1 || sortedExecutors(a.executors)[0].worker.rec.ID != "good" {
		t.Fatalf("after two failures on bad, the app runs on %s", layout(a))
	}
	if st := mustAppStatus(t, h, a.rec.ID); len(st.Excluded) != 1 || st.Excluded[0].WorkerID != "bad" {
		t.Errorf("the app's status lists exclusions %+v, want bad", st.Excluded)
	}

	// Two more apps fail on bad on their own: three apps, bad stays.
	failAnother := func() {
		t.Helper()
		b := h.addApp(one)
		for range 5 {
			if len(b.executors) > 0 && sortedExecutors(b.executors)[0].worker.rec.ID == "bad" {
				break
			}
			h.pass(time.Second, "bad", "good")
		}
		fail(b, "bad")
	}
	failAnother()
	failAnother()
	if w := h.c.workers["bad"]; w.unhealthy != "" || !w.placeable() {
		t.Fatalf("bad after 3 apps exited non-zero there: unhealthy %q, placeable %v; want it kept for the others", w.unhealthy, w.placeable())
	}
	// Three apps the worker itself failed: bad is unhealthy.
	cause = wire.CauseWorker
	for range 3 {
		failAnother()
	}
	if w := h.c.workers["bad"]; w.unhealthy == "" || w.placeable() {
		t.Fatalf("bad after it failed 3 apps' processes: unhealthy %q, placeable %v", w.unhealthy, w.placeable())
	}
	if st := h.statusOf(); !strings.Contains(workerNamed(st, "bad").Unhealthy, "the worker could not start processes of 3 apps or drivers") {
		t.Errorf("bad's status says unhealthy %q", workerNamed(st, "bad").Unhealthy)
	}
	if _, err := h.c.clearWorker("bad"); err != nil {
		t.Fatal(err)
	}
	if w := h.c.workers["bad"]; w.unhealthy != "" || !w.placeable() || len(a.excluded) != 0 {
		t.Errorf("cleared: unhealthy %q, placeable %v, app exclusions %v", w.unhealthy, w.placeable(), a.excluded)
	}
	if _, err := h.c.clearWorker("nobody"); statusOf(err) != http.StatusNotFound {
		t.Errorf("clearing an unknown worker: %v, want 404", err)
	}
}

func workerNamed(st *wire.ClusterStatus, id string) wire.WorkerStatus {
	for _, w := range st.Workers {
		if w.ID == id {
			return w
		}
	}
	return wire.WorkerStatus{}
}

// A restart policy: mode fail ends the app past its attempts within the
// interval; mode delay holds its next executors until the oldest failure
// leaves the interval; checks' health reports become events.
func TestRestartPolicies(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 1, 4096)
	attempts := 1
	desc := oneCoreApp("default", 0)
	desc.Restart = &wire.RestartPolicy{Attempts: &attempts, Interval: wdur(time.Minute), Mode: wire.RestartFail}
	a := h.addApp(desc)
	for i := range 2 {
		for range 5 {
			if len(a.executors) > 0 {
				break
			}
			h.pass(time.Second, "w1")
		}
		e := sortedExecutors(a.executors)[0]
		h.report(e, wire.ExecutorRunning, nil)
		if i == 0 {
			h.c.executorStateChanged("w1", wire.ExecutorStateChanged{AppID: a.rec.ID, ExecutorID: e.id, State: wire.ExecutorRunning, Health: wire.HealthHealthy}, func(wire.None, error) {})
			if e.health != wire.HealthHealthy {
				t.Errorf("a healthy report left the executor %q", e.health)
			}
		}
		h.report(e, wire.ExecutorFailed, intp(1))
	}
	if a.state != wire.AppFailed || !strings.Contains(a.message, "restart policy: 2 executors failed within 1m0s, more than its 1 attempts") {
		t.Errorf("after 2 failures with 1 attempt: %s %q", a.state, a.message)
	}

	h2 := newLeader(t, nil)
	h2.addWorker("w1", 1, 4096)
	desc.Restart = &wire.RestartPolicy{Attempts: &attempts, Interval: wdur(20 * time.Second), Mode: wire.RestartDelay}
	b := h2.addApp(desc)
	for range 2 {
		for range 5 {
			if len(b.executors) > 0 {
				break
			}
			h2.pass(time.Second, "w1")
		}
		h2.report(sortedExecutors(b.executors)[0], wire.ExecutorFailed, intp(1))
	}
	h2.pass(10*time.Second, "w1")
	if b.state.Finished() || len(b.executors) != 0 {
		t.Fatalf("mode delay, 10 s after the second failure: %s, %d executors; want it waiting", b.state, len(b.executors))
	}
	if w := mustAppStatus(t, h2, b.rec.ID).Waiting; !strings.Contains(w, "next try in") {
		t.Errorf("the delayed app says %q", w)
	}
	h2.pass(11*time.Second, "w1")
	if len(b.executors) != 1 {
		t.Errorf("mode delay, past the interval: %d executors, want one again (%s, waiting %q)", len(b.executors), b.state, mustAppStatus(t, h2, b.rec.ID).Waiting)
	}
}

// An app that waits because every worker is unhealthy says so (it said
// "the disk of every live worker is full").
func TestWaitingOnUnhealthyWorkersSaysSo(t *testing.T) {
	h := newLeader(t, nil, "w1")
	w := h.c.workers["w1"]
	w.unhealthy, w.unhealthySince = "processes of 3 apps or drivers failed here", h.c.now()
	h.c.touched(w)
	a := h.addApp(oneCoreApp("default", 0))
	st := mustAppStatus(t, h, a.rec.ID)
	if !strings.Contains(st.Waiting, "every live worker is unhealthy (1") || strings.Contains(st.Waiting, "disk") {
		t.Errorf("waiting %q, want it to say the workers are unhealthy", st.Waiting)
	}
	w.diskFull = "12 MB free"
	h.c.touched(w)
	if st := mustAppStatus(t, h, a.rec.ID); !strings.Contains(st.Waiting, "disk of every live worker is full") {
		t.Errorf("waiting %q on a worker with a full disk", st.Waiting)
	}
}
