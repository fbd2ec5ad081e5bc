package scheduler

import (
	"testing"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// Waiting drivers go round the ring of workers, higher priority first,
// and the executors placed after them see the room they took.
func TestDriversGoRoundTheRing(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 2, 4096)
	cl.worker("w2", 2, 4096)
	spec := NewDriverSpec(wire.DriverDescription{ProcessSpec: inDefault, Cores: 1, MemoryMB: 100})
	low := Driver{ID: "low", Spec: spec, Waiting: true}
	high := Driver{ID: "high", Spec: spec, Waiting: true}
	high.Priority = 5
	cl.drivers = []Driver{low, high}
	cl.app("A", wire.DefaultQueue, 0, 0, 100)
	p := cl.schedule()
	if len(p.Drivers) != 2 || p.Drivers[0].DriverID != "high" || p.Drivers[0].WorkerID != "w1" || p.Drivers[1].WorkerID != "w2" {
		t.Fatalf("drivers placed %+v, want high on w1 then low on w2", p.Drivers)
	}
	if p.DriverCursor != 2 {
		t.Errorf("the ring's cursor is %d, want 2", p.DriverCursor)
	}
	if got := launched(p)["A"]; got != 2 {
		t.Errorf("the app got %d executors beside two drivers on 4 cores, want 2", got)
	}
}

// Ports come from each worker's range with the placement; a worker whose
// range is spent takes no process that asks for ports.
func TestLaunchesTakePorts(t *testing.T) {
	cl := newCluster(t)
	w := cl.worker("w1", 8, 8192)
	w.Ports = NewPortPool(&wire.PortRange{First: 20000, Last: 20002})
	a := cl.app("A", wire.DefaultQueue, 0, 0, 100)
	a.Ports = []string{"http"}
	p := cl.schedule()
	if len(p.Launches) != 3 {
		t.Fatalf("%d launches with 3 ports in the range, want 3", len(p.Launches))
	}
	for i, l := range p.Launches {
		if l.Ports["http"] != 20000+i {
			t.Errorf("launch %d has ports %v, want http=%d", i, l.Ports, 20000+i)
		}
	}
	if p.PortCursors["w1"] != 20000 {
		t.Errorf("w1's next port search starts at %d, want 20000 (round the range)", p.PortCursors["w1"])
	}
	if w.Ports.Free() != 3 {
		t.Errorf("the round took the master's own ports: %d free", w.Ports.Free())
	}
}

// Two drivers of half a GPU share one GPU, as they did when the master
// decided (a pick once took the share twice from the round's own free
// map, and the second driver found no room), and a driver refused for
// want of ports leaves its GPU free for the next.
func TestDriversShareAGPUAndARefusalTakesNone(t *testing.T) {
	cl := newCluster(t)
	w := cl.worker("w1", 4, 4096)
	w.Resources, w.res = true, map[string][]int{"gpu": {placement.Whole}}
	half := NewDriverSpec(wire.DriverDescription{ProcessSpec: inDefault, Cores: 1, MemoryMB: 100, Resources: wire.ResourceAmounts{"gpu": 0.5}})
	cl.drivers = []Driver{{ID: "d1", Spec: half, Waiting: true}, {ID: "d2", Spec: half, Waiting: true}}
	p := cl.schedule()
	if len(p.Drivers) != 2 {
		t.Fatalf("drivers placed %+v, want both on w1's one GPU, half each", p.Drivers)
	}
	for _, d := range p.Drivers {
		if got := d.Resources["gpu"]; len(got) != 1 || got[0] != 0 {
			t.Errorf("driver %s got gpu %v, want address 0", d.DriverID, got)
		}
	}

	cl = newCluster(t)
	w = cl.worker("w1", 4, 4096)
	w.Resources, w.res = true, map[string][]int{"gpu": {placement.Whole}}
	w.Ports = NewPortPool(&wire.PortRange{First: 20000, Last: 20000})
	w.Ports.Hold(map[string]int{"taken": 20000})
	ported := half
	ported.Ports = []string{"http"}
	whole := NewDriverSpec(wire.DriverDescription{ProcessSpec: inDefault, Cores: 1, MemoryMB: 100, Resources: wire.ResourceAmounts{"gpu": 1}})
	cl.drivers = []Driver{{ID: "ported", Spec: ported, Waiting: true}, {ID: "whole", Spec: whole, Waiting: true}}
	p = cl.schedule()
	if len(p.Drivers) != 1 || p.Drivers[0].DriverID != "whole" {
		t.Fatalf("drivers placed %+v, want the whole-GPU driver: the one short of ports took nothing", p.Drivers)
	}
}
