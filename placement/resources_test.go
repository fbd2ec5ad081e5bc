package placement_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

func TestPickResources(t *testing.T) {
	const W = placement.Whole
	cases := []struct {
		name     string
		free     map[string][]int
		want     map[string]int
		picked   map[string][]int
		freeThen map[string][]int
	}{
		{"whole takes the lowest free addresses", map[string][]int{"gpu": {0, W, W, W}}, map[string]int{"gpu": 2 * W},
			map[string][]int{"gpu": {1, 2}}, map[string][]int{"gpu": {0, 0, 0, W}}},
		{"whole skips shared addresses", map[string][]int{"gpu": {W / 2, W}}, map[string]int{"gpu": W},
			map[string][]int{"gpu": {1}}, map[string][]int{"gpu": {W / 2, 0}}},
		{"a share goes where it fits tightest", map[string][]int{"gpu": {W, 600, 300}}, map[string]int{"gpu": 250},
			map[string][]int{"gpu": {2}}, map[string][]int{"gpu": {W, 600, 50}}},
		{"a share never spans two addresses", map[string][]int{"gpu": {400, 400}}, map[string]int{"gpu": 500},
			nil, map[string][]int{"gpu": {400, 400}}},
		{"two resources at once", map[string][]int{"gpu": {W}, "fpga": {W, W}}, map[string]int{"gpu": W, "fpga": W},
			map[string][]int{"gpu": {0}, "fpga": {0}}, map[string][]int{"gpu": {0}, "fpga": {0, W}}},
		{"one missing resource fits nothing", map[string][]int{"gpu": {W}}, map[string]int{"gpu": W, "fpga": W},
			nil, map[string][]int{"gpu": {W}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			picked, ok := placement.PickResources(tc.free, tc.want)
			if ok != (tc.picked != nil) || !reflect.DeepEqual(picked, tc.picked) {
				t.Errorf("PickResources = %v, %v; want %v", picked, ok, tc.picked)
			}
			if !reflect.DeepEqual(tc.free, tc.freeThen) {
				t.Errorf("free afterwards %v, want %v", tc.free, tc.freeThen)
			}
		})
	}
}

func TestResourceFit(t *testing.T) {
	const W = placement.Whole
	free := map[string][]int{"gpu": {W, W, W, 700, 0}}
	for _, tc := range []struct {
		want map[string]int
		fit  int
	}{
		{nil, placement.Unlimited},
		{map[string]int{"gpu": W}, 3},
		{map[string]int{"gpu": 2 * W}, 1},
		{map[string]int{"gpu": 500}, 7}, // 2 per whole address, 1 on the 700
		{map[string]int{"gpu": 350}, 8}, // 2 per whole address, 2 on the 700
		{map[string]int{"fpga": 1}, 0},
	} {
		if got := placement.ResourceFit(free, tc.want); got != tc.fit {
			t.Errorf("ResourceFit(%v) = %d, want %d", tc.want, got, tc.fit)
		}
	}
}

// TestPropertyResourcesRounds: random clusters whose workers have GPUs
// partly shared, and apps asking whole GPUs or shares of one; every policy's
// rounds must keep every invariant (never two whole executors on one
// address, never more shares on an address than it holds), and must place
// executors with resources at all.
func TestPropertyResourcesRounds(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	withResources := 0
	for i := 0; i < propertyCases/4; i++ {
		apps, workers := randomCluster(r)
		for j := range workers {
			gpus := make([]int, r.IntN(5))
			for a := range gpus {
				gpus[a] = pick(r, 0, 150, 500, 850, placement.Whole, placement.Whole)
			}
			workers[j].Resources = map[string][]int{"gpu": gpus}
		}
		for j := range apps {
			switch r.IntN(3) {
			case 0:
				apps[j].ResourcesPerExecutor = map[string]int{"gpu": pick(r, 100, 250, 460, 500, 999)}
			case 1:
				apps[j].ResourcesPerExecutor = map[string]int{"gpu": pick(r, 1, 2) * placement.Whole}
			}
		}
		for _, name := range placement.Names() {
			for _, unit := range testUnits {
				opts := placement.Options{MinCoreUnit: unit}
				got := placement.StartExecutorsOnWorkers(apps, workers, mustNew(t, name, opts))
				if bad := roundViolations(apps, workers, unit, got); len(bad) > 0 {
					t.Fatalf("case %d %s unit %d:\napps %+v\nworkers %+v\nlaunches %+v\n%v", i, name, unit, apps, workers, got, bad)
				}
				for _, l := range got {
					if len(l.Resources) > 0 {
						withResources++
					}
				}
			}
		}
	}
	if withResources < 100 {
		t.Fatalf("only %d launches with resources; the generator is broken", withResources)
	}
	t.Logf("%d launches with resources checked", withResources)
}

// TestAppWithoutResourcesIgnoresThem: resources a worker offers change
// nothing for an app that asks none (Spark's decisions stay exact).
func TestAppWithoutResourcesIgnoresThem(t *testing.T) {
	plain := workersAt(4096, 4, 8, 2)
	gpu := workersAt(4096, 4, 8, 2)
	for i := range gpu {
		gpu[i].Resources = map[string][]int{"gpu": {placement.Whole, 0}}
	}
	apps := []placement.App{{ID: "a", CoresLeft: 10, MemoryPerExecutorMB: 512, ExecutorLimit: placement.Unlimited}}
	for _, name := range placement.Names() {
		p := mustNew(t, name, placement.Options{})
		a, b := placement.StartExecutorsOnWorkers(apps, plain, p), placement.StartExecutorsOnWorkers(apps, gpu, p)
		if !same(a, b) {
			t.Errorf("%s: %v without GPUs, %v with", name, a, b)
		}
	}
}

// TestGPUAppOnlyOnGPUWorkers: an app asking a GPU per executor runs only
// where GPUs are free, one executor per free GPU with a fixed size.
func TestGPUAppOnlyOnGPUWorkers(t *testing.T) {
	workers := workersAt(8192, 8, 8, 8)
	workers[1].Resources = map[string][]int{"gpu": {placement.Whole, placement.Whole, 0}}
	apps := []placement.App{{ID: "a", CoresLeft: 24, CoresPerExecutor: 2, MemoryPerExecutorMB: 512,
		ExecutorLimit: placement.Unlimited, ResourcesPerExecutor: map[string]int{"gpu": placement.Whole}}}
	for _, name := range placement.Names() {
		got := placement.StartExecutorsOnWorkers(apps, workers, mustNew(t, name, placement.Options{}))
		if len(got) != 2 {
			t.Fatalf("%s: %d launches, want 2 (one per free GPU): %+v", name, len(got), got)
		}
		seen := map[string]bool{}
		for _, l := range got {
			key := fmt.Sprint(l.Resources["gpu"])
			if l.WorkerID != "w2" || seen[key] {
				t.Errorf("%s: launch %+v: want w2 and distinct GPUs", name, l)
			}
			seen[key] = true
		}
	}
}
