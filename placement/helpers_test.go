package placement_test

// Shared helpers: policy construction, the invariants every round and every
// Assign must keep whatever the policy, and random cluster generation.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// allOrders are the five orders of the contract, in berth's spelling.
var allOrders = []string{"cores-free-desc", "cores-free-asc", "memory-free-desc", "memory-free-asc", "worker-id"}

// sparkPolicies are the policies that must make Spark's decisions, with the
// spreadOutApps value each stands for.
var sparkPolicies = map[string]bool{"spread": true, "pack": false}

// testUnits are the minimum core units checked against the reference.
var testUnits = []int{1, 2, 3, 4, 8}

func mustNew(t testing.TB, name string, opts placement.Options) placement.Policy {
	t.Helper()
	p, err := placement.New(name, opts)
	if err != nil {
		t.Fatalf("New(%q, %+v): %v", name, opts, err)
	}
	if p == nil {
		t.Fatalf("New(%q, %+v) returned a nil policy and no error", name, opts)
	}
	return p
}

// effectiveUnit is Options.MinCoreUnit as the contract reads it: 0 or 1 is one core.
func effectiveUnit(unit int) int { return max(unit, 1) }

// roundViolations lists every way launches break the contract of one round
// over apps and workers with minimum core unit unit, whatever the policy:
//   - a launch names an app and a worker that were given, with Cores > 0 and
//     the app's executor memory (never negative);
//   - CoresPerExecutor, when set, is the size of every executor;
//   - no worker gives more cores or memory than it had free (a repeated worker
//     ID counts once, with its first entry's capacity);
//   - no app gets more than CoresLeft cores or more executors than
//     ExecutorLimit-Executors, and an app without a fixed size gets at most one
//     executor per worker;
//   - the unit invariant: without a fixed size, no executor is smaller than
//     min(unit, cores the app still needed when its first step was taken). All
//     the app's cores are granted at or after that step, so that need was at
//     least CoresLeft - granted + this executor's cores.
//   - resources: every launch takes what its app asks of each resource
//     (whole requests that many distinct addresses, a share one address),
//     and no address of a worker gives more than it had free.
//
// It returns human-readable violations; empty means the round is valid.
func roundViolations(apps []placement.App, workers []placement.Worker, unit int, launches []placement.Launch) []string {
	var bad []string
	unit = effectiveUnit(unit)
	capacity := map[string]placement.Worker{}
	for _, w := range workers {
		if _, dup := capacity[w.ID]; !dup {
			capacity[w.ID] = w
		}
	}
	appByID := map[string]placement.App{}
	for _, a := range apps {
		appByID[a.ID] = a
	}
	type use struct{ cores, memory int }
	perWorker := map[string]use{}
	perApp := map[string]use{} // memory field counts executors here
	perAppWorker := map[[2]string]int{}
	for i, l := range launches {
		app, okA := appByID[l.AppID]
		_, okW := capacity[l.WorkerID]
		if !okA || !okW {
			bad = append(bad, fmt.Sprintf("launch %d %+v names an unknown app or worker", i, l))
			continue
		}
		if l.Cores <= 0 || l.MemoryMB < 0 {
			bad = append(bad, fmt.Sprintf("launch %d %+v has non-positive cores or negative memory", i, l))
		}
		if app.MemoryPerExecutorMB >= 0 && l.MemoryMB != app.MemoryPerExecutorMB {
			bad = append(bad, fmt.Sprintf("launch %d %+v: memory is not the app's %d MB", i, l, app.MemoryPerExecutorMB))
		}
		if app.CoresPerExecutor > 0 && l.Cores != app.CoresPerExecutor {
			bad = append(bad, fmt.Sprintf("launch %d %+v: cores are not the app's CoresPerExecutor %d", i, l, app.CoresPerExecutor))
		}
		u := perWorker[l.WorkerID]
		perWorker[l.WorkerID] = use{u.cores + l.Cores, u.memory + l.MemoryMB}
		a := perApp[l.AppID]
		perApp[l.AppID] = use{a.cores + l.Cores, a.memory + 1}
		perAppWorker[[2]string{l.AppID, l.WorkerID}]++
	}
	bad = append(bad, resourceViolations(appByID, capacity, launches)...)
	for id, u := range perWorker {
		w := capacity[id]
		if u.cores > max(w.CoresFree, 0) || u.memory > max(w.MemoryFreeMB, 0) {
			bad = append(bad, fmt.Sprintf("worker %s over-committed: %d cores / %d MB launched, %d / %d free", id, u.cores, u.memory, w.CoresFree, w.MemoryFreeMB))
		}
	}
	for id, u := range perApp {
		app := appByID[id]
		if u.cores > max(app.CoresLeft, 0) {
			bad = append(bad, fmt.Sprintf("app %s got %d cores, CoresLeft %d", id, u.cores, app.CoresLeft))
		}
		room := max(app.ExecutorLimit-max(app.Executors, 0), 0)
		if app.ExecutorLimit <= 0 {
			room = 0
		}
		if u.memory > room {
			bad = append(bad, fmt.Sprintf("app %s got %d executors, limit %d, holds %d", id, u.memory, app.ExecutorLimit, app.Executors))
		}
	}
	for key, n := range perAppWorker {
		if appByID[key[0]].CoresPerExecutor <= 0 && n > 1 {
			bad = append(bad, fmt.Sprintf("app %s (no fixed executor size) got %d executors on worker %s", key[0], n, key[1]))
		}
	}
	for i, l := range launches {
		app, ok := appByID[l.AppID]
		if !ok || app.CoresPerExecutor > 0 {
			continue
		}
		needAtLeast := app.CoresLeft - perApp[l.AppID].cores + l.Cores
		if l.Cores < min(unit, needAtLeast) {
			bad = append(bad, fmt.Sprintf("launch %d %+v breaks the unit invariant: unit %d, the app still needed at least %d", i, l, unit, needAtLeast))
		}
	}
	return bad
}

// assignViolations lists how cores (Assign's result for app on workers) breaks
// what any policy's Assign must keep: one entry per worker, within each
// worker's free cores and memory, within CoresLeft and the executor limit,
// whole executors when the size is fixed, and the unit invariant (for a
// worker given c cores, c >= min(unit, toAssign - total + c) where toAssign
// is min(CoresLeft, sum of CoresFree)).
func assignViolations(app placement.App, workers []placement.Worker, unit int, cores []int) []string {
	unit = effectiveUnit(unit)
	if len(cores) != len(workers) {
		return []string{fmt.Sprintf("Assign returned %d entries for %d workers", len(cores), len(workers))}
	}
	var bad []string
	total, executors, sumFree := 0, 0, 0
	for _, w := range workers {
		if c := max(w.CoresFree, 0); sumFree > placement.Unlimited-c {
			sumFree = placement.Unlimited // saturate rather than overflow
		} else {
			sumFree += c
		}
	}
	for i, c := range cores {
		w := workers[i]
		if c < 0 || c > max(w.CoresFree, 0) {
			bad = append(bad, fmt.Sprintf("worker %d (%+v) assigned %d cores", i, w, c))
			continue
		}
		if c == 0 {
			continue
		}
		total += c
		n := 1
		if app.CoresPerExecutor > 0 {
			if c%app.CoresPerExecutor != 0 {
				bad = append(bad, fmt.Sprintf("worker %d assigned %d cores, not a multiple of %d", i, c, app.CoresPerExecutor))
			}
			n = c / app.CoresPerExecutor
		}
		executors += n
		if n*max(app.MemoryPerExecutorMB, 0) > max(w.MemoryFreeMB, 0) {
			bad = append(bad, fmt.Sprintf("worker %d (%+v) assigned %d executors of %d MB", i, w, n, app.MemoryPerExecutorMB))
		}
		if fit := resourceRoom(w.Resources, app.ResourcesPerExecutor); n > fit {
			bad = append(bad, fmt.Sprintf("worker %d (%+v) assigned %d executors, its resources hold %d", i, w, n, fit))
		}
	}
	if total > max(app.CoresLeft, 0) {
		bad = append(bad, fmt.Sprintf("assigned %d cores, CoresLeft %d", total, app.CoresLeft))
	}
	if room := max(app.ExecutorLimit-max(app.Executors, 0), 0); executors > room {
		bad = append(bad, fmt.Sprintf("assigned %d executors, room for %d", executors, room))
	}
	if app.CoresPerExecutor <= 0 {
		toAssign := min(max(app.CoresLeft, 0), sumFree)
		for i, c := range cores {
			if c > 0 && c < min(unit, toAssign-total+c) {
				bad = append(bad, fmt.Sprintf("worker %d assigned %d cores: breaks the unit invariant (unit %d, %d to assign)", i, c, unit, toAssign))
			}
		}
	}
	return bad
}

// resourceViolations checks the launches' custom resources (see
// roundViolations).
func resourceViolations(apps map[string]placement.App, workers map[string]placement.Worker, launches []placement.Launch) []string {
	var bad []string
	taken := map[string]map[string][]int{} // worker → name → thousandths per address
	for i, l := range launches {
		app, w := apps[l.AppID], workers[l.WorkerID]
		for name, amount := range app.ResourcesPerExecutor {
			addrs := l.Resources[name]
			want := 1
			if amount >= placement.Whole {
				want = (amount + placement.Whole - 1) / placement.Whole
			}
			if len(addrs) != want || len(uniqueInts(addrs)) != want {
				bad = append(bad, fmt.Sprintf("launch %d %+v: asked %d of %s, got addresses %v", i, l, amount, name, addrs))
				continue
			}
			if taken[l.WorkerID] == nil {
				taken[l.WorkerID] = map[string][]int{}
			}
			use := taken[l.WorkerID]
			if use[name] == nil {
				use[name] = make([]int, len(w.Resources[name]))
			}
			for _, a := range addrs {
				if a < 0 || a >= len(use[name]) {
					bad = append(bad, fmt.Sprintf("launch %d %+v: %s address %d does not exist", i, l, name, a))
					continue
				}
				use[name][a] += min(amount, placement.Whole)
			}
		}
		for name := range l.Resources {
			if app.ResourcesPerExecutor[name] <= 0 {
				bad = append(bad, fmt.Sprintf("launch %d %+v: given %s, never asked", i, l, name))
			}
		}
	}
	for id, use := range taken {
		for name, per := range use {
			for a, n := range per {
				if free := workers[id].Resources[name][a]; n > free {
					bad = append(bad, fmt.Sprintf("worker %s over-committed: %s address %d given %d thousandths, %d free", id, name, a, n, free))
				}
			}
		}
	}
	return bad
}

func uniqueInts(xs []int) map[int]bool {
	m := map[int]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// resourceRoom is how many executors asking want fit in free, computed
// independently of the package: whole requests count wholly free
// addresses, shares count per address.
func resourceRoom(free map[string][]int, want map[string]int) int {
	n := placement.Unlimited
	for name, amount := range want {
		k := 0
		for _, f := range free[name] {
			if amount < placement.Whole {
				k += f / amount
			} else if f == placement.Whole {
				k++
			}
		}
		if amount >= placement.Whole {
			k /= (amount + placement.Whole - 1) / placement.Whole
		}
		n = min(n, k)
	}
	return n
}

func checkRound(t testing.TB, apps []placement.App, workers []placement.Worker, unit int, launches []placement.Launch) {
	t.Helper()
	if bad := roundViolations(apps, workers, unit, launches); len(bad) > 0 {
		t.Fatalf("invalid round (unit %d)\napps    %+v\nworkers %+v\nlaunches %+v\n%v", unit, apps, workers, launches, bad)
	}
}

// randomCluster is a small random cluster with sane values (non-negative,
// unique worker and app IDs). Some workers are empty, some apps are at their
// executor limit or have no cores left, to reach every branch.
func randomCluster(r *rand.Rand) ([]placement.App, []placement.Worker) {
	workers := make([]placement.Worker, r.IntN(11))
	for i := range workers {
		workers[i] = placement.Worker{
			// IDs are not in slice order, so worker-id and ties matter.
			ID:           fmt.Sprintf("w%c%d", 'a'+r.IntN(6), i),
			CoresFree:    pick(r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32),
			MemoryFreeMB: pick(r, 0, 512, 1024, 2048, 4096, 8192, 16384),
		}
		randomGPUs(r, &workers[i])
	}
	apps := make([]placement.App, r.IntN(6))
	for i := range apps {
		app := placement.App{
			ID:                  fmt.Sprintf("app-%d", i),
			CoresLeft:           pick(r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 16, 24, 40, placement.Unlimited),
			MemoryPerExecutorMB: pick(r, 0, 256, 512, 1024, 2048, 4096),
			ExecutorLimit:       pick(r, placement.Unlimited, placement.Unlimited, 0, 1, 2, 3, 5, 8),
			Executors:           pick(r, 0, 0, 0, 1, 2, 4),
		}
		if r.IntN(2) == 0 {
			app.CoresPerExecutor = pick(r, 1, 2, 3, 4, 5, 8)
		}
		if r.IntN(3) == 0 {
			app.ResourcesPerExecutor = map[string]int{"gpu": pick(r, 1, 1, 2, 3) * placement.Whole}
		}
		apps[i] = app
	}
	return apps, workers
}

// randomGPUs gives a third of the workers 1 to 4 "gpu" addresses, each free
// or taken (Spark's model: whole addresses only).
func randomGPUs(r *rand.Rand, w *placement.Worker) {
	if r.IntN(3) != 0 {
		return
	}
	free := make([]int, 1+r.IntN(4))
	for a := range free {
		free[a] = pick(r, 0, placement.Whole, placement.Whole)
	}
	w.Resources = map[string][]int{"gpu": free}
}

func pick(r *rand.Rand, values ...int) int { return values[r.IntN(len(values))] }

// cloneCluster deep-copies apps and workers (to prove the caller's slices
// are left alone).
func cloneCluster(apps []placement.App, workers []placement.Worker) ([]placement.App, []placement.Worker) {
	apps, workers = slices.Clone(apps), slices.Clone(workers)
	for i := range apps {
		apps[i].ResourcesPerExecutor = maps.Clone(apps[i].ResourcesPerExecutor)
	}
	for i := range workers {
		if res := workers[i].Resources; res != nil {
			workers[i].Resources = map[string][]int{}
			for name, free := range res {
				workers[i].Resources[name] = slices.Clone(free)
			}
		}
	}
	return apps, workers
}

// workersAt builds workers named w1, w2, ... with the given free cores and memory.
func workersAt(memoryMB int, cores ...int) []placement.Worker {
	ws := make([]placement.Worker, len(cores))
	for i, c := range cores {
		ws[i] = placement.Worker{ID: fmt.Sprintf("w%d", i+1), CoresFree: c, MemoryFreeMB: memoryMB}
	}
	return ws
}

// coresByWorker sums launched cores per worker ID.
func coresByWorker(launches []placement.Launch) map[string]int {
	m := map[string]int{}
	for _, l := range launches {
		m[l.WorkerID] += l.Cores
	}
	return m
}

// same compares two slices of placement values (which hold maps, so are not
// comparable): equal lengths and deeply equal elements.
func same[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}
