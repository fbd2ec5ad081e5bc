package master

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// addGPUWorker registers a worker offering the gpu addresses.
func (h *harness) addGPUWorker(id string, cores int, gpus ...string) *workerInfo {
	h.t.Helper()
	port := 10000 + len(h.c.workers)
	_, err := run(h, func(reply reply[wire.RegisteredWorker]) {
		h.c.registerWorker(wire.RegisterWorker{ID: id, Host: "127.0.0.1", Port: port, Cores: cores, MemoryMB: 8192,
			Address: fmt.Sprintf("http://127.0.0.1:%d", port), Incarnation: id + "-1", Resources: map[string][]string{"gpu": gpus}}, reply)
	})
	if err != nil {
		h.t.Fatalf("registering %s: %v", id, err)
	}
	return h.c.workers[id]
}

// gpuOf is the one gpu address an executor or driver holds.
func gpuOf(t *testing.T, g wire.ResourceGrants) string {
	t.Helper()
	if len(g["gpu"].Addresses) != 1 {
		t.Fatalf("grant %+v: want one gpu address", g)
	}
	return g["gpu"].Addresses[0]
}

// An app asking a GPU per executor gets one executor per GPU, each on its
// own address, sent to the worker and written with its placement record; a
// driver asking a GPU waits and says why; an executor that ends frees its
// GPU, which the driver then gets; after a failover the executors hold the
// same addresses (from their records).
func TestGPUsAssignedExclusivelyFreedAndKeptOverFailover(t *testing.T) {
	h := newLeader(t, nil)
	w := h.addGPUWorker("w1", 8, "GPU-a", "GPU-b")
	a := h.addApp(wire.AppDescription{MaxCores: 8, CoresPerExecutor: 1, MemoryPerExecutorMB: 256,
		ResourcesPerExecutor: wire.ResourceAmounts{"gpu": 1}})
	if len(a.executors) != 2 {
		t.Fatalf("%d executors, want 2 (one per GPU)", len(a.executors))
	}
	held := map[string]*executorInfo{}
	for _, e := range a.executors {
		g := gpuOf(t, e.resources)
		if held[g] != nil {
			t.Fatalf("two executors on %s", g)
		}
		held[g] = e
		if rec := h.fx.state.Executors[fmt.Sprintf("%s/%d", a.rec.ID, e.id)]; rec == nil || gpuOf(t, rec.Resources) != g {
			t.Errorf("executor %d's record %+v does not hold %s", e.id, rec, g)
		}
	}
	for _, s := range h.takeSent(wire.WorkerAPI.LaunchExecutor.Pattern) {
		l := s.cmd.body.(wire.LaunchExecutor)
		if gpuOf(t, l.Resources) != gpuOf(t, a.executors[l.ExecutorID].resources) {
			t.Errorf("launch %d sent %+v", l.ExecutorID, l.Resources)
		}
	}
	if st := workerStatus(w).Resources; len(st) != 1 || st[0].Free != 0 {
		t.Errorf("worker status %+v: want both GPUs in use", st)
	}

	v, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.submitDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64, Resources: wire.ResourceAmounts{"gpu": 1}}, keyed{}, reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	driverID := v.ID
	if d, _ := h.c.driver(driverID); d.State != wire.DriverSubmitted || !strings.Contains(d.Waiting, "no worker has gpu=1 free") {
		t.Fatalf("the GPU driver: %s, waiting %q", d.State, d.Waiting)
	}

	// GPU-a's executor exits: the driver gets GPU-a, nothing else does.
	h.report(held["GPU-a"], wire.ExecutorExited, intp(0))
	d := h.c.drivers[driverID]
	if d.worker != w || gpuOf(t, d.held) != "GPU-a" || gpuOf(t, h.fx.state.Drivers[driverID].Resources) != "GPU-a" {
		t.Fatalf("the driver after GPU-a was freed: worker %v, held %+v, record %+v", d.worker, d.held, h.fx.state.Drivers[driverID].Resources)
	}
	if got := len(a.executors); got != 1 {
		t.Errorf("the app has %d executors, want 1 (no GPU is free)", got)
	}

	h.failover()
	w = h.c.workers["w1"]
	if free := w.resourcesFree()["gpu"]; free[0]+free[1] != placement.Whole {
		t.Errorf("after the failover the free GPU shares are %v, want GPU-b taken by the executor only", free)
	}
	for _, e := range h.c.apps[a.rec.ID].executors {
		if gpuOf(t, e.resources) != "GPU-b" {
			t.Errorf("after the failover executor %d holds %+v", e.id, e.resources)
		}
	}
}

// A share of a GPU: four executors asking 0.25 share one address; whole
// requests skip a shared address.
func TestGPUSharesPackOneAddress(t *testing.T) {
	h := newLeader(t, nil)
	h.addGPUWorker("w1", 8, "0", "1")
	shared := h.addApp(wire.AppDescription{MaxCores: 4, CoresPerExecutor: 1, MemoryPerExecutorMB: 64,
		ResourcesPerExecutor: wire.ResourceAmounts{"gpu": 0.25}})
	for _, e := range shared.executors {
		if g := e.resources["gpu"]; g.Share != 0.25 || gpuOf(t, e.resources) != "0" {
			t.Errorf("shared executor %d got %+v, want 0.25 of gpu 0", e.id, g)
		}
	}
	whole := h.addApp(wire.AppDescription{MaxCores: 4, CoresPerExecutor: 1, MemoryPerExecutorMB: 64,
		ResourcesPerExecutor: wire.ResourceAmounts{"gpu": 1}})
	if len(whole.executors) != 1 {
		t.Fatalf("the whole-GPU app has %d executors, want 1", len(whole.executors))
	}
	for _, e := range whole.executors {
		if g := e.resources["gpu"]; g.Share != 0 || gpuOf(t, e.resources) != "1" {
			t.Errorf("whole executor got %+v, want gpu 1 whole", g)
		}
	}
	// The shares are durable: a new leader knows each executor's share
	// from its record, and that both GPUs are taken.
	for _, e := range shared.executors {
		if rec := h.fx.state.Executors[fmt.Sprintf("%s/%d", shared.rec.ID, e.id)]; rec == nil || rec.Resources["gpu"].Share != 0.25 {
			t.Errorf("executor %d's record %+v does not hold its share", e.id, rec)
		}
	}
	h.failover()
	if n := len(h.c.apps[shared.rec.ID].executors); n != 4 {
		t.Fatalf("after the failover the shared app lists %d executors, want 4", n)
	}
	for _, e := range h.c.apps[shared.rec.ID].executors {
		if g := e.resources["gpu"]; g.Share != 0.25 || gpuOf(t, e.resources) != "0" {
			t.Errorf("after the failover shared executor %d holds %+v, want 0.25 of gpu 0", e.id, g)
		}
	}
	if free := h.c.workers["w1"].resourcesFree()["gpu"]; free[0] != 0 || free[1] != 0 {
		t.Errorf("after the failover the free GPU shares are %v, want none", free)
	}
}

// Bad resource requests and offers are refused with 400 and change nothing.
func TestBadResourcesRefused(t *testing.T) {
	h := newLeader(t, nil)
	for _, amounts := range []wire.ResourceAmounts{{"gpu": 1.5}, {"gpu": 0}, {"gpu": -1}, {"GPU": 1}, {"gpu": 0.0001}, {"gpu": 5000}} {
		err := admission.App(wire.AppDescription{Command: []string{"x"}, ResourcesPerExecutor: amounts})
		if err == nil || statusOf(err) != http.StatusBadRequest {
			t.Errorf("app asking %v: %v, want 400", amounts, err)
		}
		if err := admission.Driver(wire.DriverDescription{Command: []string{"x"}, Resources: amounts}); err == nil {
			t.Errorf("driver asking %v accepted", amounts)
		}
	}
	for _, offer := range []map[string][]string{{"gpu": {}}, {"gpu": {"0", "0"}}, {"Gpu": {"0"}}, {"gpu": {"a b"}}} {
		reg := wire.RegisterWorker{ID: "w1", Host: "127.0.0.1", Port: 1, Cores: 1, MemoryMB: 1, Address: "http://127.0.0.1:1", Resources: offer}
		if err := validateRegistration(reg); err == nil {
			t.Errorf("offer %v accepted", offer)
		}
	}
	if len(h.c.apps) != 0 || len(h.c.workers) != 0 {
		t.Error("refused requests changed the state")
	}
}
