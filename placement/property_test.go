package placement_test

// Property tests on random clusters with fixed seeds (so a failure is
// reproducible): every policy keeps the round's invariants, and spread and
// pack make exactly the reference's decisions, per Assign and per round, for
// every unit in testUnits (the issue demands unit 1; the implementation
// claims the others too).

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// propertyCases is how many random clusters each property test draws. The
// whole package stays well under 20 s with -race on 2 cores.
const propertyCases = 4000

func TestPropertyAssignMatchesReference(t *testing.T) {
	type key struct {
		name string
		unit int
	}
	policies := map[key]placement.Policy{}
	for _, name := range placement.Names() {
		for _, unit := range testUnits {
			policies[key{name, unit}] = mustNew(t, name, placement.Options{MinCoreUnit: unit})
		}
	}
	r := rand.New(rand.NewPCG(2024, 1))
	compared := 0
	for i := 0; i < propertyCases; i++ {
		apps, workers := randomCluster(r)
		for _, app := range apps {
			for k, p := range policies {
				before := slices.Clone(workers)
				got := p.Assign(app, workers)
				if !same(workers, before) {
					t.Fatalf("case %d %s unit %d: Assign modified its workers", i, k.name, k.unit)
				}
				if bad := assignViolations(app, workers, k.unit, got); len(bad) > 0 {
					t.Fatalf("case %d %s unit %d: Assign(%+v, %+v) = %v\n%v", i, k.name, k.unit, app, workers, got, bad)
				}
				spread, isSpark := sparkPolicies[k.name]
				if !isSpark {
					continue
				}
				if want := referenceAssign(app, workers, spread, k.unit); !same(got, want) {
					t.Fatalf("case %d %s unit %d: Assign differs from the reference\napp     %+v\nworkers %+v\ngot  %v\nwant %v",
						i, k.name, k.unit, app, workers, got, want)
				}
				compared++
			}
		}
	}
	if compared < propertyCases {
		t.Fatalf("only %d comparisons with the reference; the generator is broken", compared)
	}
}

func TestPropertyRoundMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(99, 5))
	launched, withGPUs := 0, 0
	for i := 0; i < propertyCases; i++ {
		apps, workers := randomCluster(r)
		// Spark's spellings and the default "" too.
		order := pick2(r, append([]string{"", "CORES_FREE_ASC", "MEMORY_FREE_DESC"}, allOrders...))
		for _, name := range placement.Names() {
			for _, unit := range append([]int{0}, testUnits...) {
				n, g := checkRoundCase(t, fmt.Sprintf("case %d", i), apps, workers, name, placement.Options{Order: order, MinCoreUnit: unit})
				launched, withGPUs = launched+n, withGPUs+g
			}
		}
	}
	if launched == 0 || withGPUs < 100 {
		t.Fatalf("%d launches, %d with GPUs; the generator is broken", launched, withGPUs)
	}
}

// TestPropertyRoundLargerClusters: fewer, bigger clusters (up to 60 workers,
// 64 cores, a dozen apps) so that spread makes many passes and later apps
// meet fragmented workers.
func TestPropertyRoundLargerClusters(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 141))
	for i := 0; i < 300; i++ {
		workers := make([]placement.Worker, 1+r.IntN(60))
		for j := range workers {
			workers[j] = placement.Worker{ID: fmt.Sprintf("worker-%03d", r.IntN(1000)*100+j), CoresFree: r.IntN(65), MemoryFreeMB: 1024 * r.IntN(257)}
		}
		apps := make([]placement.App, 1+r.IntN(12))
		for j := range apps {
			apps[j] = placement.App{
				ID:                  fmt.Sprintf("app-%d", j),
				CoresLeft:           pick(r, 1+r.IntN(300), placement.Unlimited),
				MemoryPerExecutorMB: 1024 * r.IntN(33),
				ExecutorLimit:       pick(r, placement.Unlimited, r.IntN(40)),
				Executors:           r.IntN(5),
			}
			if r.IntN(2) == 0 {
				apps[j].CoresPerExecutor = 1 + r.IntN(16)
			}
		}
		order := pick2(r, allOrders)
		for _, name := range placement.Names() {
			for _, unit := range testUnits {
				checkRoundCase(t, fmt.Sprintf("large case %d", i), apps, workers, name, placement.Options{Order: order, MinCoreUnit: unit})
			}
		}
	}
}

// checkRoundCase runs one round and checks it: inputs untouched, invariants
// kept, and for spread and pack the reference's launches exactly. It returns
// how many executors were launched, and how many of them with resources.
func checkRoundCase(t *testing.T, label string, apps []placement.App, workers []placement.Worker, name string, opts placement.Options) (launched, withResources int) {
	t.Helper()
	p := mustNew(t, name, opts)
	apps0, workers0 := cloneCluster(apps, workers)
	got := placement.StartExecutorsOnWorkers(apps, workers, p)
	if !same(apps, apps0) || !same(workers, workers0) {
		t.Fatalf("%s %s %+v: StartExecutorsOnWorkers modified its input", label, name, opts)
	}
	if bad := roundViolations(apps, workers, opts.MinCoreUnit, got); len(bad) > 0 {
		t.Fatalf("%s %s %+v: invalid round\napps    %+v\nworkers %+v\nlaunches %+v\n%v", label, name, opts, apps, workers, got, bad)
	}
	if spread, ok := sparkPolicies[name]; ok {
		want := referenceStartExecutorsOnWorkers(apps, workers, spread, opts.MinCoreUnit, opts.Order)
		if !same(got, want) {
			t.Fatalf("%s %s %+v: round differs from the reference\napps    %+v\nworkers %+v\ngot  %+v\nwant %+v",
				label, name, opts, apps, workers, got, want)
		}
	}
	for _, l := range got {
		if len(l.Resources) > 0 {
			withResources++
		}
	}
	return len(got), withResources
}

func pick2(r *rand.Rand, values []string) string { return values[r.IntN(len(values))] }
