package placement_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// bestfit's own walk of the index (index_bestfit.go) makes the decisions
// bestfit makes over every worker, round after round on the same index:
// fixed-size executors over runs of equal free cores, apps without a fixed
// size, units, every order, memory that filters workers out, and memory
// that bounds a worker's slots (where the index hands the app to
// StartExecutorsOnWorkers).
func TestIndexBestFitMatchesItsAssign(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 77))
	fast, launched := 0, 0
	for i := range 2500 {
		workers := bestFitWorkers(r)
		order := pick2(r, append([]string{""}, allOrders...))
		p := mustNew(t, "bestfit", placement.Options{Order: order, MinCoreUnit: pick(r, 0, 1, 2, 3, 4)})
		x := placement.NewIndex(p)
		for _, j := range r.Perm(len(workers)) {
			x.Put(workers[j])
		}
		for round := range 3 {
			apps := bestFitApps(r)
			for _, app := range apps {
				if app.CoresPerExecutor == 0 || !memoryBounds(workers, app) {
					fast++
				}
			}
			want := placement.StartExecutorsOnWorkers(apps, workers, p)
			got := x.Round(apps)
			if !same(got, want) {
				t.Fatalf("case %d round %d %q: index %+v\nwant %+v\nworkers %+v\napps %+v", i, round, order, got, want, workers, apps)
			}
			launched += len(want)
			workers = x.Workers()
		}
	}
	t.Logf("%d apps on the fast path, %d launches", fast, launched)
	if fast < 5000 || launched < 20000 {
		t.Fatalf("only %d apps on the fast path, %d launches: the generator is broken", fast, launched)
	}
}

// bestFitWorkers are up to 40 workers, many with equal free cores, most with
// memory to spare, some short of it.
func bestFitWorkers(r *rand.Rand) []placement.Worker {
	workers := make([]placement.Worker, r.IntN(41))
	for i := range workers {
		cores := pick(r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 24)
		memory := cores*4096 + pick(r, 0, 1024, 8192)
		if r.IntN(8) == 0 {
			memory = pick(r, 0, 512, 1024, 2048)
		}
		workers[i] = placement.Worker{ID: fmt.Sprintf("w%c%d", 'a'+r.IntN(6), i), CoresFree: cores, MemoryFreeMB: memory}
	}
	return workers
}

func bestFitApps(r *rand.Rand) []placement.App {
	apps := make([]placement.App, 1+r.IntN(5))
	for i := range apps {
		apps[i] = placement.App{
			ID:                  fmt.Sprintf("app-%d", i),
			CoresLeft:           pick(r, 1, 2, 3, 4, 5, 7, 8, 10, 13, 16, 24, 40, 100, placement.Unlimited),
			MemoryPerExecutorMB: pick(r, 0, 256, 1024, 2048, 4096),
			ExecutorLimit:       pick(r, placement.Unlimited, placement.Unlimited, 1, 2, 3, 5, 8),
		}
		if r.IntN(2) == 0 {
			apps[i].CoresPerExecutor = pick(r, 1, 2, 3, 4, 5, 8)
		}
	}
	return apps
}

// memoryBounds reports whether some worker's memory holds fewer of app's
// executors than its cores do.
func memoryBounds(workers []placement.Worker, app placement.App) bool {
	for _, w := range workers {
		if app.MemoryPerExecutorMB > 0 && w.CoresFree > 0 && w.MemoryFreeMB/app.MemoryPerExecutorMB < w.CoresFree/app.CoresPerExecutor {
			return true
		}
	}
	return false
}
