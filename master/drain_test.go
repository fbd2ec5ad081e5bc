package master

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// drain drains worker id with deadline through the core.
func (h *harness) drain(id string, deadline time.Duration) (*wire.WorkerStatus, error) {
	st, err := run(h, func(reply reply[wire.WorkerStatus]) { h.c.drainWorker(id, deadline, reply) })
	return &st, err
}

// A drained worker takes nothing new; what runs there keeps running until
// the deadline; undrain before it makes the worker ALIVE again.
func TestDrainPlacesNothingNewAndUndrainReverses(t *testing.T) {
	h := newLeader(t, nil, "w1")
	a := h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	st, err := h.drain("w1", time.Minute)
	if err != nil || st.State != wire.WorkerDecommissioning || st.DrainDeadline == nil || !st.DrainDeadline.Equal(h.clock.t.Add(time.Minute)) {
		t.Fatalf("drain: %+v %v", st, err)
	}
	if rec := h.fx.state.Workers["w1"]; rec.DrainDeadline == nil {
		t.Errorf("the drain is not durable: %+v", rec)
	}
	b := h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	if len(b.executors) != 0 {
		t.Errorf("an executor placed on a draining worker")
	}
	if bs, _ := h.c.app(b.rec.ID); !strings.Contains(bs.Waiting, "no worker is alive") {
		t.Errorf("the new app's wait: %q", bs.Waiting)
	}
	h.pass(30*time.Second, "w1")
	if len(a.executors) != 1 {
		t.Errorf("the running executor did not keep running before the deadline")
	}
	if st, err := h.drain("w1", 2*time.Minute); err != nil || !st.DrainDeadline.Equal(h.clock.t.Add(2*time.Minute)) {
		t.Errorf("re-timing the drain: %+v %v", st, err)
	}
	v, err := run(h, func(reply reply[wire.WorkerStatus]) { h.c.undrainWorker("w1", reply) })
	if st := v; err != nil || st.State != wire.WorkerAlive || st.DrainDeadline != nil || h.fx.state.Workers["w1"].DrainDeadline != nil {
		t.Fatalf("undrain: %+v %v", v, err)
	}
	if len(b.executors) != 1 {
		t.Errorf("after the undrain the waiting app got %d executors, want 1", len(b.executors))
	}
	// Errors: a worker not being drained, an unknown one.
	_, err = run(h, func(reply reply[wire.WorkerStatus]) { h.c.undrainWorker("w1", reply) })
	if se := statusErrorOf(err); se.Status != http.StatusConflict || se.Code != wire.CodeWrongState {
		t.Errorf("undrain of an ALIVE worker: %v", err)
	}
	if _, err := h.drain("nope", time.Minute); statusErrorOf(err).Code != wire.CodeUnknownWorker {
		t.Errorf("drain of an unknown worker: %v", err)
	}
}

// At the deadline what is left is killed: executors LOST and replaced on
// another worker, a supervised driver relaunched elsewhere.
func TestDrainDeadlineMovesWhatIsLeft(t *testing.T) {
	h := newLeader(t, nil, "w1")
	a := h.addApp(wire.AppDescription{MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	driver := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 100, Supervise: true})
	for _, e := range executors(a) {
		h.report(e, wire.ExecutorRunning, nil)
	}
	if _, err := h.drain("w1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	h.addWorker("w2", 4, 4096) // joins during the drain
	h.takeSent("/v1/executors/kill")
	h.pass(11*time.Second, "w1", "w2")
	if kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern); len(kills) != 2 || kills[0].worker != "w1" {
		t.Errorf("executor kills %+v, want both of w1's", kills)
	}
	if kills := h.takeSent(wire.WorkerAPI.KillDriver.Pattern); len(kills) != 1 || kills[0].worker != "w1" {
		t.Errorf("driver kills %+v, want the driver on w1", kills)
	}
	if got := layout(a); len(got) != 2 || got[0] != "w2:1" || got[1] != "w2:1" {
		t.Errorf("the app's executors after the deadline: %v, want two on w2", got)
	}
	d, _ := h.c.driver(driver)
	if d.State != wire.DriverRelaunching || d.RelaunchedAs == "" {
		t.Fatalf("the supervised driver: %+v", d)
	}
	if next, _ := h.c.driver(d.RelaunchedAs); next.WorkerID != "w2" {
		t.Errorf("the relaunch runs on %q, want w2", next.WorkerID)
	}
	lost := 0
	for _, e := range mustAppStatus(t, h, a.rec.ID).Executors {
		if e.State == wire.ExecutorLost && strings.Contains(e.Message, "drain deadline") {
			lost++
		}
	}
	if lost != 2 {
		t.Errorf("%d executors LOST to the drain deadline, want 2", lost)
	}
	// What ran there is replaced: the worker can be put back to work
	// (it stayed DECOMMISSIONING for ever before).
	st, err := run(h, func(reply reply[wire.WorkerStatus]) { h.c.undrainWorker("w1", reply) })
	if err != nil || st.State != wire.WorkerAlive {
		t.Fatalf("undrain once what ran there was replaced: %+v, %v", st, err)
	}
	// And drained again, with a deadline acted on anew.
	b := h.addApp(wire.AppDescription{MaxCores: 4, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	h.commit()
	onW1 := 0
	for _, e := range executors(b) {
		h.report(e, wire.ExecutorRunning, nil)
		if e.worker.rec.ID == "w1" {
			onW1++
		}
	}
	if onW1 == 0 {
		t.Fatal("nothing placed on w1 after the undrain")
	}
	if _, err := h.drain("w1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	h.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	h.pass(11*time.Second, "w1", "w2")
	if kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern); len(kills) != onW1 {
		t.Errorf("the second drain's deadline killed %d executors, want w1's %d", len(kills), onW1)
	}
}

// The drain is durable: a new leader finds the worker still draining.
func TestDrainSurvivesAFailover(t *testing.T) {
	h := newLeader(t, nil)
	w := h.addWorker("w1", 4, 4096)
	if _, err := h.drain("w1", time.Hour); err != nil {
		t.Fatal(err)
	}
	h.failover()
	if err := h.reregister(w, "w1-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.workerLatestState("w1", wire.WorkerLatestState{WorkerID: "w1"}); err != nil {
		t.Fatal(err)
	}
	h.commit()
	if got := h.c.workers["w1"]; got.state != wire.WorkerDecommissioning || got.schedulable() {
		t.Errorf("after the failover: %s (schedulable %v), want DECOMMISSIONING", got.state, got.schedulable())
	}
}

func mustAppStatus(t *testing.T, h *harness, id string) *wire.AppStatus {
	t.Helper()
	st, err := h.c.app(id)
	if err != nil {
		t.Fatal(err)
	}
	return &st
}

// A driver whose kill was accepted ends KILLED when its worker is lost
// while the kill's write is still in flight, not ERROR (the fault suite
// saw "killReq true" answered, then ERROR "worker lost"), and a supervised
// one is not relaunched.
func TestDriverKilledWhenItsWorkerIsLostDuringTheKill(t *testing.T) {
	for _, supervise := range []bool{false, true} {
		h := newLeader(t, nil, "w1", "w2")
		id := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 100, Supervise: supervise})
		h.commit()
		d := h.c.drivers[id]
		if d == nil || d.worker == nil {
			t.Fatalf("driver %s not placed", id)
		}
		var killed *wire.DriverStatus
		h.c.removeWorker(d.worker, "silent", nil) // proposed first: it commits while the kill's write is in flight
		h.c.killDriver(id, func(st wire.DriverStatus, err error) {
			if err == nil {
				killed = &st
			}
		})
		h.commit()
		if killed == nil || !killed.KillRequested {
			t.Fatalf("supervise=%v: the kill answered %+v", supervise, killed)
		}
		st, _ := h.c.driver(id)
		if st.State != wire.DriverKilled || st.RelaunchedAs != "" {
			t.Errorf("supervise=%v: the driver after its worker was lost during its kill: %s (%s), relaunched as %q; want KILLED, not relaunched", supervise, st.State, st.Message, st.RelaunchedAs)
		}
	}
}
