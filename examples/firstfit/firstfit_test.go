package firstfit_test

import (
	"reflect"
	"slices"
	"testing"

	_ "github.com/berth-cluster/berth/examples/firstfit"
	"github.com/berth-cluster/berth/placement"
)

// Importing the package is all it takes: the policy is known by name and
// places through the same round as the built-in ones.
func TestFirstFitRegistersAndPlaces(t *testing.T) {
	if !slices.Contains(placement.Names(), "first-fit") {
		t.Fatalf("Names() = %v", placement.Names())
	}
	p, err := placement.New("first-fit", placement.Options{})
	if err != nil {
		t.Fatal(err)
	}
	workers := []placement.Worker{
		{ID: "w3", CoresFree: 16, MemoryFreeMB: 8192},
		{ID: "w1", CoresFree: 4, MemoryFreeMB: 8192},
		{ID: "w2", CoresFree: 8, MemoryFreeMB: 1024},
	}
	apps := []placement.App{{ID: "a", CoresLeft: 8, CoresPerExecutor: 2, MemoryPerExecutorMB: 1024, ExecutorLimit: placement.Unlimited}}
	got := placement.StartExecutorsOnWorkers(apps, workers, p)
	want := []placement.Launch{
		{AppID: "a", WorkerID: "w1", Cores: 2, MemoryMB: 1024},
		{AppID: "a", WorkerID: "w1", Cores: 2, MemoryMB: 1024},
		{AppID: "a", WorkerID: "w2", Cores: 2, MemoryMB: 1024}, // its memory holds one
		{AppID: "a", WorkerID: "w3", Cores: 2, MemoryMB: 1024},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("launches %+v\nwant %+v", got, want)
	}
}
