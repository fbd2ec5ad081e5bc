package placement_test

// The minimum core unit: the step is min(unit, cores still to assign) when
// the app did not fix its executor size, so an app that lost executors gets
// its cores back in executors of at least min(unit, what it still needs)
// instead of as many 1-core executors; an app that does fix the size is not
// affected. The expected arrays here are worked out by hand from the rules
// in the issue, and checked against the reference too.

import (
	"maps"
	"slices"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

func TestAssignWithUnit(t *testing.T) {
	workers := workersAt(4096, 10, 10, 10)
	cases := []struct {
		name         string
		unit         int
		app          placement.App
		spread, pack []int
	}{
		// Steps of 4: spread 4+4, pack 4+4 on the first worker.
		{"unit 4, 8 cores", 4, sparkApp(1024, 0, 8, none), []int{4, 4, 0}, []int{8, 0, 0}},
		// Spread: 4,4,4 then 4 more on the first worker; pack: 8 fits, 12 does not.
		{"unit 4, 16 cores", 4, sparkApp(1024, 0, 16, none), []int{8, 4, 4}, []int{8, 8, 0}},
		// Spread: 3,3,3 / 3,3 then the last 1 (min(3,1)) joins w3's executor.
		// Pack: 9 on w1 (1 core left over), 3+3 on w2, then the last 1 joins w2.
		{"unit 3, 16 cores", 3, sparkApp(1024, 0, 16, none), []int{6, 6, 4}, []int{9, 7, 0}},
		// 30 to assign, but a worker with 2 free cores cannot take a 4-core step.
		{"unit 4, unlimited", 4, sparkApp(1024, 0, none, none), []int{8, 8, 8}, []int{8, 8, 8}},
		// The app needs only 2 after the first 8: min(8, 2) = 2 is a legal step.
		{"unit 8, 10 cores", 8, sparkApp(1024, 0, 10, none), []int{8, 2, 0}, []int{10, 0, 0}},
		// A unit larger than any worker: nothing fits.
		{"unit 16, unlimited", 16, sparkApp(1024, 0, none, none), []int{0, 0, 0}, []int{0, 0, 0}},
		// CoresPerExecutor wins over the unit.
		{"unit 8 ignored with cores per executor 2", 8, sparkApp(256, 2, 4, none), []int{2, 2, 0}, []int{4, 0, 0}},
		// The executor limit still counts executors, not steps.
		{"unit 4, limit 2", 4, sparkApp(256, 0, 16, 2), []int{8, 8, 0}, []int{8, 8, 0}},
	}
	for _, tc := range cases {
		for policy, spread := range sparkPolicies {
			want := tc.pack
			if spread {
				want = tc.spread
			}
			t.Run(tc.name+"/"+policy, func(t *testing.T) {
				if ref := referenceAssign(tc.app, workers, spread, tc.unit); !slices.Equal(ref, want) {
					t.Fatalf("reference = %v, worked out by hand %v", ref, want)
				}
				p := mustNew(t, policy, placement.Options{MinCoreUnit: tc.unit})
				if got := p.Assign(tc.app, workers); !same(got, want) {
					t.Fatalf("Assign = %v, want %v", got, want)
				}
			})
		}
	}
}

// TestSeedExample is the example of the issue: workers with 8, 7 and 6 free
// cores, an app that needs 3 more.
func TestSeedExample(t *testing.T) {
	workers := workersAt(65536, 8, 7, 6)
	app := placement.App{ID: "app", CoresLeft: 3, MemoryPerExecutorMB: 1024, ExecutorLimit: placement.Unlimited}
	apps := []placement.App{app}

	// Spark (spread, unit 1): three 1-core executors, one per worker.
	p := mustNew(t, "spread", placement.Options{})
	got := placement.StartExecutorsOnWorkers(apps, workers, p)
	want := []placement.Launch{
		{AppID: "app", WorkerID: "w1", Cores: 1, MemoryMB: 1024},
		{AppID: "app", WorkerID: "w2", Cores: 1, MemoryMB: 1024},
		{AppID: "app", WorkerID: "w3", Cores: 1, MemoryMB: 1024},
	}
	if !same(got, want) {
		t.Errorf("spread, unit 1: %+v, want %+v", got, want)
	}

	// Unit 4, cores-free-desc: one 3-core executor on the 8-core worker.
	for _, policy := range []string{"spread", "pack"} {
		for _, order := range []string{"", "cores-free-desc", "CORES_FREE_DESC"} {
			p := mustNew(t, policy, placement.Options{Order: order, MinCoreUnit: 4})
			got := placement.StartExecutorsOnWorkers(apps, workers, p)
			want := []placement.Launch{{AppID: "app", WorkerID: "w1", Cores: 3, MemoryMB: 1024}}
			if !same(got, want) {
				t.Errorf("%s, order %q, unit 4: %+v, want %+v", policy, order, got, want)
			}
		}
	}
	for _, name := range placement.Names() {
		p := mustNew(t, name, placement.Options{MinCoreUnit: 4})
		launches := placement.StartExecutorsOnWorkers(apps, workers, p)
		checkRound(t, apps, workers, 4, launches)
		if len(launches) != 1 || launches[0].Cores != 3 {
			t.Errorf("%s, unit 4: %+v, want one 3-core executor", name, launches)
		}
	}
}

// TestUnitAppWaits: with no worker able to take a whole step the app gets
// nothing this round, for every policy, however many cores are free in all.
func TestUnitAppWaits(t *testing.T) {
	workers := workersAt(65536, 3, 3, 3, 3) // 12 free cores, none on one worker for a 4-core step
	app := placement.App{ID: "app", CoresLeft: 10, MemoryPerExecutorMB: 512, ExecutorLimit: placement.Unlimited}
	for _, name := range placement.Names() {
		p := mustNew(t, name, placement.Options{MinCoreUnit: 4})
		if got := placement.StartExecutorsOnWorkers([]placement.App{app}, workers, p); len(got) != 0 {
			t.Errorf("%s, unit 4: launched %+v on 3-core workers", name, got)
		}
		// Unit 1 must of course schedule it (Spark does).
		p = mustNew(t, name, placement.Options{MinCoreUnit: 1})
		launches := placement.StartExecutorsOnWorkers([]placement.App{app}, workers, p)
		checkRound(t, []placement.App{app}, workers, 1, launches)
		if total := sumCores(launches); total != 10 {
			t.Errorf("%s, unit 1: %d cores launched, want 10", name, total)
		}
	}
	// An app that needs less than the unit is not held back by it: min(4, 2).
	small := app
	small.CoresLeft = 2
	for _, name := range placement.Names() {
		p := mustNew(t, name, placement.Options{MinCoreUnit: 4})
		got := placement.StartExecutorsOnWorkers([]placement.App{small}, workers, p)
		if len(got) != 1 || got[0].Cores != 2 {
			t.Errorf("%s, unit 4, 2 cores needed: %+v, want one 2-core executor", name, got)
		}
	}
}

// TestUnitRecovery is the motivating case: an app that lost executors and
// needs 6 cores back, on a cluster with a few 2-core holes and one big worker.
// Spark hands out 1-core steps across every hole; unit 4 gives one executor.
func TestUnitRecovery(t *testing.T) {
	workers := []placement.Worker{
		{ID: "w1", CoresFree: 2, MemoryFreeMB: 8192},
		{ID: "w2", CoresFree: 2, MemoryFreeMB: 8192},
		{ID: "w3", CoresFree: 2, MemoryFreeMB: 8192},
		{ID: "w4", CoresFree: 8, MemoryFreeMB: 8192},
	}
	app := placement.App{ID: "app", CoresLeft: 6, MemoryPerExecutorMB: 1024, ExecutorLimit: placement.Unlimited, Executors: 3}
	apps := []placement.App{app}

	// Spark: cores-free-desc gives w4, w1, w2, w3; two passes of one core each.
	spark := placement.StartExecutorsOnWorkers(apps, workers, mustNew(t, "spread", placement.Options{}))
	if got, want := coresByWorker(spark), map[string]int{"w4": 2, "w1": 2, "w2": 1, "w3": 1}; !maps.Equal(got, want) {
		t.Errorf("spread, unit 1: %v, want %v", got, want)
	}
	for _, policy := range []string{"spread", "pack"} {
		got := placement.StartExecutorsOnWorkers(apps, workers, mustNew(t, policy, placement.Options{MinCoreUnit: 4}))
		want := []placement.Launch{{AppID: "app", WorkerID: "w4", Cores: 6, MemoryMB: 1024}}
		if !same(got, want) {
			t.Errorf("%s, unit 4: %+v, want %+v", policy, got, want)
		}
	}
}

func sumCores(launches []placement.Launch) int {
	total := 0
	for _, l := range launches {
		total += l.Cores
	}
	return total
}
