package placement_test

import (
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

func TestPlaceOne(t *testing.T) {
	const W = placement.Whole
	workers := []placement.Worker{
		{ID: "small", CoresFree: 2, MemoryFreeMB: 4096, Resources: map[string][]int{"gpu": {W}}},
		{ID: "big", CoresFree: 16, MemoryFreeMB: 4096, Resources: map[string][]int{"gpu": {300, W}}},
		{ID: "cpu", CoresFree: 32, MemoryFreeMB: 4096},
	}
	_, before := cloneCluster(nil, workers)
	p := mustNew(t, "spread", placement.Options{})
	gpuApp := placement.App{ID: "a", CoresLeft: 4, CoresPerExecutor: 4, MemoryPerExecutorMB: 512, ExecutorLimit: 1,
		ResourcesPerExecutor: map[string]int{"gpu": 250}}
	l, i := placement.PlaceOne(gpuApp, workers, p)
	want := placement.Launch{AppID: "a", WorkerID: "big", Cores: 4, MemoryMB: 512, Resources: map[string][]int{"gpu": {0}}}
	if i != 1 || !reflect.DeepEqual(l, want) {
		t.Errorf("PlaceOne = %+v at %d, want %+v at 1 (the only worker with 4 cores and a GPU; the share on the fullest GPU)", l, i, want)
	}
	if !same(workers, before) {
		t.Error("PlaceOne modified the workers")
	}
	if _, i := placement.PlaceOne(placement.App{ID: "b", CoresLeft: 64, CoresPerExecutor: 64, ExecutorLimit: 1}, workers, p); i != -1 {
		t.Errorf("a 64-core executor placed at %d", i)
	}
	if _, i := placement.PlaceOne(placement.App{ID: "c", CoresLeft: 4, CoresPerExecutor: 4, ExecutorLimit: 0}, workers, p); i != -1 {
		t.Errorf("an app at its executor limit placed at %d", i)
	}
	// Spread at unit 1 without a fixed size: one core, on the worker with
	// the most free cores.
	l, i = placement.PlaceOne(placement.App{ID: "d", CoresLeft: 10, ExecutorLimit: placement.Unlimited}, workers, p)
	if i != 2 || l.Cores != 1 {
		t.Errorf("unsized app: %+v at %d, want 1 core on cpu", l, i)
	}
}

// pickyPolicy is spread that picks the GPU it is told to.
type pickyPolicy struct {
	placement.Policy
	pick map[string][]int
}

func (p pickyPolicy) PickResources(placement.App, placement.Worker) map[string][]int { return p.pick }

// A policy's own choice of addresses is taken when it fits, and replaced by
// PickResources when it does not (another GPU than asked, one too full, a
// resource not asked for).
func TestResourcePickerIsCheckedAndFallsBack(t *testing.T) {
	const W = placement.Whole
	workers := []placement.Worker{{ID: "w", CoresFree: 8, MemoryFreeMB: 4096, Resources: map[string][]int{"gpu": {W, 100, W}}}}
	app := placement.App{ID: "a", CoresLeft: 1, CoresPerExecutor: 1, ExecutorLimit: 1, ResourcesPerExecutor: map[string]int{"gpu": 500}}
	spread := mustNew(t, "spread", placement.Options{})
	for _, tc := range []struct {
		pick map[string][]int
		want []int
	}{
		{map[string][]int{"gpu": {2}}, []int{2}},              // taken
		{map[string][]int{"gpu": {1}}, []int{0}},              // too full: fallback (best fit, lowest)
		{map[string][]int{"gpu": {0, 2}}, []int{0}},           // two addresses for a share
		{map[string][]int{"gpu": {7}}, []int{0}},              // no such address
		{map[string][]int{"gpu": {2}, "fpga": {0}}, []int{0}}, // not asked for
		{nil, []int{0}}, // no opinion
	} {
		p := pickyPolicy{spread, tc.pick}
		l, _ := placement.PlaceOne(app, workers, p)
		if !reflect.DeepEqual(l.Resources["gpu"], tc.want) {
			t.Errorf("policy picks %v: got %v, want %v", tc.pick, l.Resources, tc.want)
		}
		launches := placement.StartExecutorsOnWorkers([]placement.App{app}, workers, p)
		if len(launches) != 1 || !reflect.DeepEqual(launches[0].Resources["gpu"], tc.want) {
			t.Errorf("round, policy picks %v: got %+v, want gpu %v", tc.pick, launches, tc.want)
		}
	}
}

func TestTag(t *testing.T) {
	for _, tc := range []struct {
		res  map[string]int
		want string
	}{
		{nil, ""},
		{map[string]int{"gpu": 0}, ""},
		{map[string]int{"gpu": 460}, "gpu=share"},
		{map[string]int{"gpu": 2 * placement.Whole}, "gpu=2"},
		{map[string]int{"gpu": placement.Whole, "fpga": 500}, "fpga=share,gpu=1"},
	} {
		if got := placement.Tag(placement.App{ResourcesPerExecutor: tc.res}); got != tc.want {
			t.Errorf("Tag(%v) = %q, want %q", tc.res, got, tc.want)
		}
	}
}
