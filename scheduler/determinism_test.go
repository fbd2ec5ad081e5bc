package scheduler

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// randomCluster is a cluster of every kind of demand the round knows:
// queues with weights, guarantees and limits, apps of fixed and free
// sizes with priorities, GPUs, ports, constraints and gangs, executors
// running, drivers waiting, and clocks part-way through their delays.
func randomCluster(t *testing.T, seed uint64) *cluster {
	rng := rand.New(rand.NewPCG(seed, 34))
	cl := newCluster(t)
	cl.cfg.MinCoreUnit = rng.IntN(4)
	for i := range 4 + rng.IntN(12) {
		w := cl.worker(fmt.Sprintf("w%02d", i), 2+rng.IntN(15), 1024*(1+rng.IntN(16)))
		w.Labels = map[string]string{"zone": []string{"a", "b"}[rng.IntN(2)]}
		w.Ports = NewPortPool(&wire.PortRange{First: 20000, Last: 20000 + rng.IntN(6)})
		if rng.IntN(3) == 0 {
			w.Resources, w.res = true, map[string][]int{"gpu": {placement.Whole, placement.Whole}}
		}
	}
	queues := []string{wire.DefaultQueue}
	for i := range rng.IntN(4) {
		q := cl.queue(fmt.Sprintf("q%d", i), float64(1+rng.IntN(3)))
		switch rng.IntN(3) {
		case 0:
			q.Guarantee = wire.Amount{Cores: 1 + rng.IntN(8)}
		case 1:
			q.Limit = &wire.Amount{Cores: 1 + rng.IntN(16)}
		}
		if rng.IntN(3) == 0 {
			q.StarvedSince = t0.Add(-time.Duration(rng.IntN(60)) * time.Second)
		}
		queues = append(queues, q.Name)
	}
	for i := range 3 + rng.IntN(10) {
		a := cl.app(fmt.Sprintf("app%02d", i), queues[rng.IntN(len(queues))], rng.IntN(3), rng.IntN(20), 128*(1+rng.IntN(8)))
		a.Cores = rng.IntN(4)
		switch rng.IntN(6) {
		case 0:
			a.Ports = []string{"http"}
		case 1:
			a.Constraints = []wire.Constraint{{Label: "zone", In: []string{"a"}}}
		case 2:
			a.Cores, a.Gang, a.MaxCores = 1+rng.IntN(2), 2+rng.IntN(3), 0
			a.MaxCores = a.Gang * a.Cores
			a.GangWaitingSince = t0.Add(-time.Duration(rng.IntN(180)) * time.Second)
		case 3:
			a.Resources, a.Asked = map[string]int{"gpu": placement.Whole}, wire.ResourceAmounts{"gpu": 1}
		}
		if a.MaxCores == 0 {
			a.MaxCores = placement.Unlimited
		}
		if rng.IntN(4) == 0 {
			a.WaitingSince = t0.Add(-time.Duration(rng.IntN(60)) * time.Second)
		}
		for range rng.IntN(3) {
			w := cl.workers[rng.IntN(len(cl.workers))]
			if w.CoresFree >= max(a.Cores, 1) && w.MemoryFreeMB >= a.MemoryMB && a.Gang == 0 && len(a.Resources) == 0 {
				cl.run(a, w.ID)
			}
		}
	}
	for i := range rng.IntN(3) {
		d := Driver{ID: fmt.Sprintf("d%d", i), Spec: NewDriverSpec(wire.DriverDescription{Cores: 1 + rng.IntN(2), MemoryMB: 256, ProcessSpec: wire.ProcessSpec{Queue: queues[rng.IntN(len(queues))]}}), Waiting: true}
		cl.drivers = append(cl.drivers, d)
	}
	return cl
}

// The same view gives the same plan: two views of one state, each with
// its own index, scheduled one after the other, plan for plan; and one
// view scheduled twice.
func TestSameViewSamePlan(t *testing.T) {
	var launches, drivers, preemptions, holds int
	for seed := range uint64(200) {
		cl := randomCluster(t, seed)
		first, second := cl.schedule(), cl.schedule()
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("seed %d: two plans of one view differ:\n%+v\n%+v", seed, first, second)
		}
		v := cl.view()
		if again, twice := Schedule(v), Schedule(v); !reflect.DeepEqual(again, first) || !reflect.DeepEqual(twice, first) {
			t.Fatalf("seed %d: one view scheduled twice gave\n%+v\n%+v\nwant %+v", seed, again, twice, first)
		}
		launches, drivers, preemptions, holds = launches+len(first.Launches), drivers+len(first.Drivers), preemptions+len(first.Preemptions), holds+len(first.GangHolds)
	}
	if launches == 0 || drivers == 0 || preemptions == 0 || holds == 0 {
		t.Errorf("the clusters decided %d launches, %d drivers, %d preemptions and %d gang holds: each kind must be tried", launches, drivers, preemptions, holds)
	}
}

// Scheduling changes nothing of the view: the apps, the queues, the
// workers' ports and the index (its workers, their free room and order)
// are as they were, though the plans launched.
func TestScheduleLeavesTheViewAsItWas(t *testing.T) {
	launches := 0
	for seed := range uint64(50) {
		cl := randomCluster(t, seed)
		v := cl.view()
		apps, queues := fmt.Sprint(v.Apps), fmt.Sprint(v.Queues)
		index := v.Index.(*placement.Index)
		workers, cores := index.Workers(), index.CoresFree()
		var free []int
		for _, w := range cl.workers {
			free = append(free, w.Ports.Free(), w.Ports.Next())
		}
		launches += len(Schedule(v).Launches)
		if got := index.Workers(); !reflect.DeepEqual(got, workers) || index.CoresFree() != cores {
			t.Fatalf("seed %d: Schedule changed its index:\n%+v\nwant %+v", seed, got, workers)
		}
		var after []int
		for _, w := range cl.workers {
			after = append(after, w.Ports.Free(), w.Ports.Next())
		}
		if fmt.Sprint(v.Apps) != apps || fmt.Sprint(v.Queues) != queues || !reflect.DeepEqual(free, after) {
			t.Fatalf("seed %d: Schedule changed its view", seed)
		}
	}
	if launches == 0 {
		t.Error("no plan launched anything: the index was never taken from")
	}
}
