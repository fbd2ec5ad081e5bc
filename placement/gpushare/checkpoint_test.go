package gpushare

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// An index of an incremental policy rolled back to a checkpoint holds its
// workers as they were, and its placer with them: the next round decides
// what a round on a fresh index of those workers decides.
func TestIncrementalIndexRollback(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 33))
	launched, compared := 0, 0
	// A given workload, memory and all: a policy that learns either from
	// the apps it is asked decides differently as it learns, rolled back
	// or not, and a fresh index of the same policy would not compare.
	workload := []Shape{
		{TaskShape: placement.TaskShape{Cores: 8000, Resources: map[string]int{GPU: W}, Weight: 5}, MemoryMB: 16384},
		{TaskShape: placement.TaskShape{Cores: 4000, Resources: map[string]int{GPU: 500}, Weight: 4}, MemoryMB: 4096},
		{TaskShape: placement.TaskShape{Cores: 16000, Weight: 1}, MemoryMB: 32768},
	}
	for i := range 300 {
		workers := make([]placement.Worker, 2+r.IntN(12))
		for j := range workers {
			workers[j] = randomGPUWorker(r, fmt.Sprintf("w%03d", j))
		}
		apps := randomGPUApps(r, i)
		for _, name := range []string{"fgd", "frag-fit"} {
			p, err := placement.New(name, placement.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p.(WorkloadSetter).SetWorkload(workload)
			x := placement.NewIndex(p)
			for _, w := range workers {
				x.Put(w)
			}
			before := x.Workers()
			x.Checkpoint()
			launched += len(x.Round(apps))
			x.Delete(workers[0].ID)
			x.Put(placement.Worker{ID: "joined", CoresFree: 64000, MemoryFreeMB: 1 << 20})
			x.Round(apps)
			x.Rollback()
			if got := x.Workers(); !reflect.DeepEqual(got, before) {
				t.Fatalf("case %d %s: after rollback\n%+v\nwant %+v", i, name, got, before)
			}
			f := placement.NewIndex(p)
			for _, w := range before {
				f.Put(w)
			}
			compared++
			if got, want := x.Round(apps), f.Round(apps); !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d %s: the round after a rollback decided\n%+v\nwant %+v", i, name, got, want)
			}
		}
	}
	if launched == 0 || compared < 600 {
		t.Fatalf("%d launched, %d rounds compared of 600: the rollback was not tried", launched, compared)
	}
}
