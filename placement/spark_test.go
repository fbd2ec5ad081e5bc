package placement_test

// Spark's own scheduling tests, ported. The expected numbers are those of
// MasterSuite ("basic scheduling", "scheduling with max cores", "... with
// cores per executor", "... with executor limit", and their combinations:
// three workers with 10 cores and 4096 MB each) and of WorkerSelectionSuite
// (SPARK-46881, the five worker selection policies). Each case is checked on
// the policy under test and on the reference, so a wrong reference cannot
// hide a wrong policy (or the other way round).

import (
	"fmt"
	"slices"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// sparkApp is MasterSuite's makeAppInfo: maxCores None is Unlimited, and a new
// ApplicationInfo has no executors and executorLimit Int.MaxValue.
func sparkApp(memoryMB, coresPerExecutor, maxCores, executorLimit int) placement.App {
	return placement.App{
		ID:                  "app",
		CoresLeft:           maxCores,
		CoresPerExecutor:    coresPerExecutor,
		MemoryPerExecutorMB: memoryMB,
		ExecutorLimit:       executorLimit,
	}
}

const none = placement.Unlimited // MasterSuite's None for maxCores / default executor limit

func TestSparkMasterSuiteScheduling(t *testing.T) {
	workers := workersAt(4096, 10, 10, 10) // MasterSuite's workerInfos
	type want struct{ spread, pack []int }
	both := func(cores ...int) want { return want{cores, cores} }
	cases := []struct {
		name string
		app  placement.App
		want want
	}{
		{"basic scheduling", sparkApp(1024, 0, none, none), both(10, 10, 10)},
		{"basic scheduling with more memory", sparkApp(3072, 0, none, none), both(10, 10, 10)},

		{"max cores 8", sparkApp(1024, 0, 8, none), want{[]int{3, 3, 2}, []int{8, 0, 0}}},
		{"max cores 16", sparkApp(1024, 0, 16, none), want{[]int{6, 5, 5}, []int{10, 6, 0}}},

		{"cores per executor 2, memory-bound (4 * 2)", sparkApp(1024, 2, none, none), both(8, 8, 8)},
		{"cores per executor 2 (5 * 2)", sparkApp(256, 2, none, none), both(10, 10, 10)},
		{"cores per executor 3 (3 * 3)", sparkApp(256, 3, none, none), both(9, 9, 9)},

		{"cores per executor 2 and max cores 4", sparkApp(256, 2, 4, none), want{[]int{2, 2, 0}, []int{4, 0, 0}}},
		{"cores per executor 2 and max cores 20", sparkApp(256, 2, 20, none), want{[]int{8, 6, 6}, []int{10, 10, 0}}},
		{"cores per executor 3 and max cores 20", sparkApp(256, 3, 20, none), want{[]int{6, 6, 6}, []int{9, 9, 0}}},

		{"executor limit 0", sparkApp(256, 0, none, 0), both(0, 0, 0)},
		{"executor limit 2", sparkApp(256, 0, none, 2), both(10, 10, 0)},
		{"executor limit 5", sparkApp(256, 0, none, 5), both(10, 10, 10)},

		{"executor limit 0 and max cores 16", sparkApp(256, 0, 16, 0), both(0, 0, 0)},
		{"executor limit 2 and max cores 16", sparkApp(256, 0, 16, 2), want{[]int{8, 8, 0}, []int{10, 6, 0}}},
		{"executor limit 5 and max cores 16", sparkApp(256, 0, 16, 5), want{[]int{6, 5, 5}, []int{10, 6, 0}}},

		{"executor limit 0 and cores per executor 4", sparkApp(256, 4, none, 0), both(0, 0, 0)},
		{"executor limit 2 and cores per executor 4", sparkApp(256, 4, none, 2), want{[]int{4, 4, 0}, []int{8, 0, 0}}},
		{"executor limit 5 and cores per executor 4", sparkApp(256, 4, none, 5), both(8, 8, 4)},

		{"everything, executor limit 0", sparkApp(256, 4, 18, 0), both(0, 0, 0)},
		{"everything, executor limit 2", sparkApp(256, 4, 18, 2), want{[]int{4, 4, 0}, []int{8, 0, 0}}},
		{"everything, executor limit 5", sparkApp(256, 4, 18, 5), want{[]int{8, 4, 4}, []int{8, 8, 0}}},
	}
	for _, tc := range cases {
		for policy, spread := range sparkPolicies {
			expected := tc.want.pack
			if spread {
				expected = tc.want.spread
			}
			t.Run(tc.name+"/"+policy, func(t *testing.T) {
				if got := referenceAssign(tc.app, workers, spread, 1); !same(got, expected) {
					t.Fatalf("reference assigns %v, Spark's MasterSuite expects %v", got, expected)
				}
				// MinCoreUnit 0 and 1 are both Spark's one core.
				for _, unit := range []int{0, 1} {
					p := mustNew(t, policy, placement.Options{MinCoreUnit: unit})
					if got := p.Assign(tc.app, slices.Clone(workers)); !same(got, expected) {
						t.Fatalf("MinCoreUnit %d: Assign = %v, Spark's MasterSuite expects %v", unit, got, expected)
					}
				}
			})
		}
	}
}

// TestSparkScheduleWithExecutorsHeld: Executors counts against the limit, the
// way app.executors.size does in Spark's underLimit.
func TestSparkScheduleWithExecutorsHeld(t *testing.T) {
	workers := workersAt(4096, 10, 10, 10)
	app := sparkApp(256, 2, none, 5)
	app.Executors = 3 // room for 2 more
	for policy, spread := range sparkPolicies {
		want := []int{2, 2, 0}
		if !spread {
			want = []int{4, 0, 0}
		}
		got := mustNew(t, policy, placement.Options{}).Assign(app, workers)
		if !same(got, want) {
			t.Errorf("%s: Assign = %v, want %v", policy, got, want)
		}
		if ref := referenceAssign(app, workers, spread, 1); !slices.Equal(ref, want) {
			t.Errorf("%s: reference = %v, want %v", policy, ref, want)
		}
	}
}

// TestSparkWorkerSelectionSuite ports SPARK-46881's WorkerSelectionSuite to
// a whole round: three workers 10001 (5 cores, 1280 MB), 10002 (6 cores,
// 5120 MB) and 10003 (7 cores, 3840 MB); an app of two 2-core 128 MB
// executors (maxCores 4). Spark checks which workers get its executors.
func TestSparkWorkerSelectionSuite(t *testing.T) {
	workers := []placement.Worker{
		{ID: "10001", CoresFree: 5, MemoryFreeMB: 1280},
		{ID: "10002", CoresFree: 6, MemoryFreeMB: 5120},
		{ID: "10003", CoresFree: 7, MemoryFreeMB: 3840},
	}
	app := placement.App{ID: "app", CoresLeft: 4, CoresPerExecutor: 2, MemoryPerExecutorMB: 128, ExecutorLimit: placement.Unlimited}
	cases := []struct {
		order  string
		spread bool
		want   []string
	}{
		{"CORES_FREE_ASC", true, []string{"10001", "10002"}},
		{"CORES_FREE_ASC", false, []string{"10001"}},
		{"CORES_FREE_DESC", true, []string{"10002", "10003"}},
		{"CORES_FREE_DESC", false, []string{"10003"}},
		{"MEMORY_FREE_ASC", true, []string{"10001", "10003"}},
		{"MEMORY_FREE_ASC", false, []string{"10001"}},
		{"MEMORY_FREE_DESC", true, []string{"10002", "10003"}},
		{"MEMORY_FREE_DESC", false, []string{"10002"}},
		{"WORKER_ID", true, []string{"10001", "10002"}},
		{"WORKER_ID", false, []string{"10001"}},
	}
	for _, tc := range cases {
		policy := "pack"
		if tc.spread {
			policy = "spread"
		}
		// Spark's spelling and berth's must mean the same order.
		for _, order := range []string{tc.order, referenceOrderName(tc.order)} {
			t.Run(fmt.Sprintf("%s/%s", order, policy), func(t *testing.T) {
				p := mustNew(t, policy, placement.Options{Order: order})
				launches := placement.StartExecutorsOnWorkers([]placement.App{app}, workers, p)
				checkRound(t, []placement.App{app}, workers, 1, launches)
				if got := distinctWorkers(launches); !same(got, tc.want) {
					t.Errorf("executors on %v, Spark expects %v (launches %+v)", got, tc.want, launches)
				}
				ref := referenceStartExecutorsOnWorkers([]placement.App{app}, workers, tc.spread, 1, order)
				if got := distinctWorkers(ref); !same(got, tc.want) {
					t.Errorf("reference: executors on %v, Spark expects %v", got, tc.want)
				}
				if len(launches) != 2 {
					t.Errorf("%d executors launched, want 2", len(launches))
				}
			})
		}
	}
}

func distinctWorkers(launches []placement.Launch) []string {
	var ids []string
	for _, l := range launches {
		ids = append(ids, l.WorkerID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
