package placement_test

// BenchmarkRound times one scheduling round (StartExecutorsOnWorkers) at
// 100 .. 100,000 workers with 1, 100 and 1,000 waiting apps, for each policy
// and for the reference (Spark's algorithm transcribed, O(W²) per app). Run:
//
//	go test -run '^$' -bench BenchmarkRound -benchmem -benchtime 3x ./placement
//
// The cluster and the apps are built before the timed loop; a round does not
// modify them, so every iteration schedules the same waiting apps on the
// same free capacity.

import (
	"fmt"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// benchWorkers are 64-core, 256 GB workers, partly busy: between 16 and 64
// cores free, with memory in proportion (4 GB per core), in no useful order.
func benchWorkers(n int) []placement.Worker {
	ws := make([]placement.Worker, n)
	for i := range ws {
		free := 16 + (i*37)%49
		ws[i] = placement.Worker{
			ID:           fmt.Sprintf("worker-%06d", (i*7919)%n),
			CoresFree:    free,
			MemoryFreeMB: free * 4096,
		}
	}
	return ws
}

// benchApps are waiting apps of 8 .. 256 cores (finite CoresLeft); odd ones
// fix CoresPerExecutor at 2, 4 or 8; executors of 2 .. 8 GB; no limit.
func benchApps(n int) []placement.App {
	apps := make([]placement.App, n)
	for i := range apps {
		apps[i] = placement.App{
			ID:                  fmt.Sprintf("app-%04d", i),
			CoresLeft:           8 + (i*53)%249,
			MemoryPerExecutorMB: 2048 * (1 + i%4),
			ExecutorLimit:       placement.Unlimited,
		}
		if i%2 == 1 {
			apps[i].CoresPerExecutor = []int{2, 4, 8}[(i/2)%3]
		}
	}
	return apps
}

// referenceBudgetNS is the estimated cost above which a reference case is
// skipped: a few seconds per op.
const referenceBudgetNS = 5e9

// referenceCostNS estimates one reference round. Every app that finds room
// calls canLaunchExecutorForApp a few times per worker (the first filter, a
// spread pass or pack's steps, the filter after it), and each call re-sums
// W assigned-executor counters: measured on the benchmark machine, about
// 1 ns per worker² per app (1,000 workers: 2.5 ms per app; 10,000: 83 ms).
// Apps that arrive when the cluster is full are cheap, so at most the
// cluster's free capacity worth of apps (~40 free cores per worker, ~132
// cores per app) counts.
func referenceCostNS(workers, apps int) float64 {
	fitting := min(apps, max(1, workers*40/132))
	return float64(workers) * float64(workers) * float64(fitting)
}

var benchSink []placement.Launch

func BenchmarkRound(b *testing.B) {
	type variant struct {
		name   string
		policy string // "" for the reference
		spread bool
		unit   int
	}
	variants := []variant{
		{"reference-u1", "", true, 1}, // Spark's default, spreadOut = true
		{"reference-pack-u1", "", false, 1},
		{"spread-u1", "spread", true, 1},
		{"spread-u4", "spread", true, 4},
		{"pack-u1", "pack", false, 1},
		{"pack-u4", "pack", false, 4},
		{"bestfit-u4", "bestfit", false, 4},
	}
	for _, nw := range []int{100, 1000, 10000, 100000} {
		workers := benchWorkers(nw)
		for _, na := range []int{1, 100, 1000} {
			apps := benchApps(na)
			for _, v := range variants {
				b.Run(fmt.Sprintf("workers=%d/apps=%d/policy=%s", nw, na, v.name), func(b *testing.B) {
					if v.policy == "" {
						if est := referenceCostNS(nw, na); est > referenceBudgetNS {
							b.Skipf("reference is O(W²) per app: estimated %.0f s per op, over the %.0f s budget", est/1e9, referenceBudgetNS/1e9)
						}
						b.ReportAllocs()
						var launches []placement.Launch
						for b.Loop() {
							launches = referenceStartExecutorsOnWorkers(apps, workers, v.spread, v.unit, "cores-free-desc")
						}
						b.ReportMetric(float64(len(launches)), "launches/op")
						benchSink = launches
						return
					}
					p := mustNew(b, v.policy, placement.Options{MinCoreUnit: v.unit})
					b.ReportAllocs()
					var launches []placement.Launch
					for b.Loop() {
						launches = placement.StartExecutorsOnWorkers(apps, workers, p)
					}
					b.ReportMetric(float64(len(launches)), "launches/op")
					benchSink = launches
				})
			}
		}
	}
}

// BenchmarkRoundResources times the same round with and without a custom
// resource: every worker offers 8 GPUs (a quarter of them in use), and
// every app asks one GPU per executor, side by side with the same cluster
// and apps asking none. Run:
//
//	go test -run '^$' -bench BenchmarkRoundResources -benchmem ./placement
func BenchmarkRoundResources(b *testing.B) {
	for _, nw := range []int{1000, 10000} {
		plain := benchWorkers(nw)
		gpus := benchWorkers(nw)
		for i := range gpus {
			free := make([]int, 8)
			for a := range free {
				if (i+a)%4 != 0 {
					free[a] = placement.Whole
				}
			}
			gpus[i].Resources = map[string][]int{"gpu": free}
		}
		for _, na := range []int{10, 100} {
			plainApps, gpuApps := benchApps(na), benchApps(na)
			for i := range gpuApps {
				gpuApps[i].ResourcesPerExecutor = map[string]int{"gpu": placement.Whole}
			}
			for _, policy := range []string{"spread", "pack", "bestfit"} {
				p := mustNew(b, policy, placement.Options{MinCoreUnit: 4})
				for _, side := range []struct {
					name    string
					workers []placement.Worker
					apps    []placement.App
				}{{"without", plain, plainApps}, {"gpu-per-executor", gpus, gpuApps}} {
					b.Run(fmt.Sprintf("workers=%d/apps=%d/policy=%s/resources=%s", nw, na, policy, side.name), func(b *testing.B) {
						b.ReportAllocs()
						var launches []placement.Launch
						for b.Loop() {
							launches = placement.StartExecutorsOnWorkers(side.apps, side.workers, p)
						}
						b.ReportMetric(float64(len(launches)), "launches/op")
						benchSink = launches
					})
				}
			}
		}
	}
}

// BenchmarkIndexRound times one round of a master that keeps its workers in
// a placement.Index between rounds (as berth's master does): the index is
// built once; each iteration runs the round, then (outside the timing) puts
// back the workers it changed. Beside it, at the sizes where it fits the budget, the reference
// (Spark's loop) on the same apps and workers. Run:
//
//	go test -run '^$' -bench BenchmarkIndexRound -benchmem ./placement
func BenchmarkIndexRound(b *testing.B) {
	for _, nw := range []int{1000, 10000, 100000} {
		workers := benchWorkers(nw)
		for _, na := range []int{10, 1000} {
			apps := benchApps(na)
			for _, v := range []struct {
				name   string
				policy string
				unit   int
				all    bool // StartExecutorsOnWorkers over every worker: bestfit before its walk of the index
			}{
				{"spread-u1", "spread", 1, false}, {"pack-u1", "pack", 1, false}, {"spread-u4", "spread", 4, false}, {"reference-u1", "", 1, false},
				{"bestfit-u4", "bestfit", 4, false}, {"bestfit-u4-over-all", "bestfit", 4, true},
			} {
				b.Run(fmt.Sprintf("workers=%d/apps=%d/policy=%s", nw, na, v.name), func(b *testing.B) {
					if v.all {
						if nw*na > 10_000_000 {
							b.Skip("over every worker: about 20 s per op")
						}
						p := mustNew(b, v.policy, placement.Options{MinCoreUnit: v.unit})
						b.ReportAllocs()
						for b.Loop() {
							benchSink = placement.StartExecutorsOnWorkers(apps, workers, p)
						}
						return
					}
					if v.policy == "" {
						if est := referenceCostNS(nw, na); est > referenceBudgetNS {
							b.Skipf("reference: estimated %.0f s per op", est/1e9)
						}
						b.ReportAllocs()
						for b.Loop() {
							benchSink = referenceStartExecutorsOnWorkers(apps, workers, true, v.unit, "cores-free-desc")
						}
						return
					}
					p := mustNew(b, v.policy, placement.Options{MinCoreUnit: v.unit})
					x := placement.NewIndex(p)
					byID := make(map[string]placement.Worker, len(workers))
					for _, w := range workers {
						x.Put(w)
						byID[w.ID] = w
					}
					b.ReportAllocs()
					var launches []placement.Launch
					for b.Loop() {
						launches = x.Round(apps)
						b.StopTimer()
						touched := map[string]bool{}
						for _, l := range launches {
							touched[l.WorkerID] = true
						}
						for id := range touched {
							x.Put(byID[id])
						}
						b.StartTimer()
					}
					b.ReportMetric(float64(len(launches)), "launches/op")
					benchSink = launches
				})
			}
		}
	}
}

// BenchmarkIndexRoundAfterJoin is the round that follows a worker's
// arrival on an index kept by the master, placing one small app. For
// Spark's policies in the orders by free cores, a worker whose ID sorts
// after the others' (a Spark-style ID, which starts with the time) takes
// the next position; one whose ID sorts between two others has the round
// lay out every worker again (O(W)).
func BenchmarkIndexRoundAfterJoin(b *testing.B) {
	for _, nw := range []int{10000, 100000} {
		for _, v := range []struct{ order, id string }{
			{placement.OrderCoresFreeDesc, "worker-~%09d"}, // after every other ID
			{placement.OrderCoresFreeDesc, "worker-000000~%09d"},
			{placement.OrderMemoryFreeDesc, "worker-000000~%09d"},
		} {
			order := v.order
			after := v.id == "worker-~%09d"
			b.Run(fmt.Sprintf("workers=%d/order=%s/id-after-all=%t", nw, order, after), func(b *testing.B) {
				x := placement.NewIndex(mustNew(b, "spread", placement.Options{Order: order}))
				for _, w := range benchWorkers(nw) {
					x.Put(w)
				}
				app := []placement.App{{ID: "small", CoresLeft: 1, ExecutorLimit: placement.Unlimited}}
				x.Round(nil) // the first layout
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					n++
					joiner := placement.Worker{ID: fmt.Sprintf(v.id, n), CoresFree: 1, MemoryFreeMB: 1024}
					x.Put(joiner)
					benchSink = x.Round(app)
					b.StopTimer()
					x.Delete(joiner.ID) // it left; the next arrival is new again
					for _, l := range benchSink {
						if w, ok := x.Worker(l.WorkerID); ok {
							w.CoresFree += l.Cores
							x.Put(w)
						}
					}
					b.StartTimer()
				}
			})
		}
	}
}
