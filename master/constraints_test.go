package master

import (
	"fmt"
	"testing"

	"github.com/berth-cluster/berth/admission"
	_ "github.com/berth-cluster/berth/placement/gpushare" // fgd, frag-fit (as cmd/master registers them)
	"github.com/berth-cluster/berth/wire"
)

// addLabelledWorker registers a worker of 4 cores and 4096 MB with labels.
func (h *harness) addLabelledWorker(id string, labels map[string]string) *workerInfo {
	h.t.Helper()
	port := 10000 + len(h.c.workers)
	_, err := run(h, func(reply reply[wire.RegisteredWorker]) {
		h.c.registerWorker(wire.RegisterWorker{ID: id, Host: "127.0.0.1", Port: port, Cores: 4, MemoryMB: 4096,
			Address: fmt.Sprintf("http://127.0.0.1:%d", port), Incarnation: id + "-1", Labels: labels}, reply)
	})
	if err != nil {
		h.t.Fatalf("registering %s: %v", id, err)
	}
	return h.c.workers[id]
}

// Executors and drivers go only to workers whose labels satisfy every
// constraint (in, notIn, an unset label); what cannot go anywhere says
// which constraint, and the workers' labels are in their status. With
// Spark's spread and with fgd and frag-fit, whose incremental placer asks
// an app's filter only of the workers its decisions would take.
func TestConstraintsPlaceOnlyOnMatchingWorkers(t *testing.T) {
	for _, policy := range []string{"spread", "fgd", "frag-fit"} {
		t.Run(policy, func(t *testing.T) { constraintsPlaceOnlyOnMatchingWorkers(t, policy) })
	}
}

func constraintsPlaceOnlyOnMatchingWorkers(t *testing.T, policy string) {
	h := newLeader(t, func(c *Config) { c.Placement = policy })
	h.addLabelledWorker("w-t4", map[string]string{"gpu-model": "T4", "zone": "a"})
	h.addLabelledWorker("w-p100", map[string]string{"gpu-model": "P100", "zone": "b"})
	h.addLabelledWorker("w-bare", nil)

	// A driver, with the same rule.
	id := h.addDriver(wire.DriverDescription{Command: []string{"d"}, MemoryMB: 100, ProcessSpec: wire.ProcessSpec{Constraints: []wire.Constraint{{Label: "gpu-model", In: []string{"P100"}}}}})
	h.commit()
	d, _ := h.c.driver(id)
	if d.WorkerID != "w-p100" {
		t.Errorf("a driver with gpu-model in [P100] on %q", d.WorkerID)
	}
	id = h.addDriver(wire.DriverDescription{Command: []string{"d"}, MemoryMB: 100, ProcessSpec: wire.ProcessSpec{Constraints: []wire.Constraint{{Label: "gpu-model", In: []string{"V100"}}}}})
	h.commit()
	d, _ = h.c.driver(id)
	if d.WorkerID != "" {
		t.Errorf("a driver with gpu-model in [V100] placed on %q", d.WorkerID)
	}
	wantWaiting(t, "driver V100", d.Waiting, "no live worker with gpu-model in [V100]")

	onT4 := h.addApp(wire.AppDescription{MaxCores: 8, CoresPerExecutor: 1, ProcessSpec: wire.ProcessSpec{Constraints: []wire.Constraint{{Label: "gpu-model", In: []string{"T4"}}}}})
	h.commit()
	if n := len(onT4.executors); n != 4 {
		t.Fatalf("gpu-model in [T4]: %d executors, want the 4 cores of w-t4", n)
	}
	for _, e := range onT4.executors {
		if e.worker.rec.ID != "w-t4" {
			t.Errorf("gpu-model in [T4]: an executor on %s", e.worker.rec.ID)
		}
	}
	a, _ := h.c.app(onT4.rec.ID)
	wantWaiting(t, "T4 full", a.Waiting, "no worker with gpu-model in [T4] has 1 free cores")
	if len(a.Constraints) != 1 || a.Constraints[0].Label != "gpu-model" {
		t.Errorf("the app's status has constraints %+v", a.Constraints)
	}

	notA := h.addApp(wire.AppDescription{MaxCores: 8, CoresPerExecutor: 1, ProcessSpec: wire.ProcessSpec{Constraints: []wire.Constraint{{Label: "zone", NotIn: []string{"a"}}}}})
	h.commit()
	on := map[string]int{}
	for _, e := range notA.executors {
		on[e.worker.rec.ID]++
	}
	if on["w-p100"] == 0 || on["w-bare"] == 0 || on["w-t4"] != 0 {
		t.Errorf("zone not in [a]: executors on %v, want some on w-p100 and w-bare (an unset label is not in [a]), none on w-t4", on)
	}

	nowhere := h.addApp(wire.AppDescription{MaxCores: 1, ProcessSpec: wire.ProcessSpec{Constraints: []wire.Constraint{{Label: "gpu-model", In: []string{"A100"}}}}})
	h.commit()
	a, _ = h.c.app(nowhere.rec.ID)
	if len(nowhere.executors) != 0 {
		t.Fatalf("gpu-model in [A100]: placed on %d workers", len(nowhere.executors))
	}
	wantWaiting(t, "no A100", a.Waiting, "waiting: no live worker with gpu-model in [A100]")

	too := h.addApp(wire.AppDescription{MaxCores: 8, CoresPerExecutor: 8, ProcessSpec: wire.ProcessSpec{Constraints: []wire.Constraint{{Label: "gpu-model", In: []string{"P100"}}}}})
	a, _ = h.c.app(too.rec.ID)
	wantWaiting(t, "too big", a.Waiting, "cannot start: no worker with gpu-model in [P100] has 8 cores")

	st := h.statusOf()
	for _, w := range st.Workers {
		if w.ID == "w-t4" && w.Labels["gpu-model"] != "T4" {
			t.Errorf("w-t4's status labels %v", w.Labels)
		}
	}
}

// Bad constraints and labels are refused with a reason, and nothing is
// registered.
func TestConstraintsBadInputRefused(t *testing.T) {
	h := newLeader(t, nil, "w1")
	for _, cs := range [][]wire.Constraint{
		{{Label: "", In: []string{"T4"}}},
		{{Label: "gpu-model"}},
		{{Label: "gpu-model", In: []string{"T4"}, NotIn: []string{"P100"}}},
		{{Label: "gpu model", In: []string{"T4"}}},
		{{Label: "gpu-model", In: []string{"T4,P100"}}},
	} {
		if err := admission.App(wire.AppDescription{Command: []string{"x"}, ProcessSpec: wire.ProcessSpec{Constraints: cs}}); err == nil {
			t.Errorf("constraints %+v accepted", cs)
		}
		if err := admission.Driver(wire.DriverDescription{Command: []string{"x"}, ProcessSpec: wire.ProcessSpec{Constraints: cs}}); err == nil {
			t.Errorf("a driver's constraints %+v accepted", cs)
		}
	}
	for _, l := range []map[string]string{{"": "x"}, {"k": ""}, {"k": "a b"}, {"k=v": "x"}} {
		r := wire.RegisterWorker{ID: "w2", Host: "127.0.0.1", Port: 9999, Cores: 1, MemoryMB: 1, Address: "http://127.0.0.1:9999", Labels: l}
		if err := validateRegistration(r); err == nil {
			t.Errorf("labels %v accepted", l)
		}
	}
	if len(h.c.apps) != 0 || len(h.c.workers) != 1 {
		t.Errorf("state changed: %d apps, %d workers", len(h.c.apps), len(h.c.workers))
	}
}
