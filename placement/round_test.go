package placement_test

// StartExecutorsOnWorkers: one FIFO round. What later apps see, which apps
// are skipped, how assigned cores become launches, and that no input (empty,
// repeated, negative, huge) and no policy (however wrong) makes a round
// panic, over-commit a worker or touch the caller's slices.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

func unlimitedApp(id string, coresLeft, coresPerExecutor, memoryMB int) placement.App {
	return placement.App{ID: id, CoresLeft: coresLeft, CoresPerExecutor: coresPerExecutor, MemoryPerExecutorMB: memoryMB, ExecutorLimit: placement.Unlimited}
}

// TestRoundLaunches: how cores become launches. A fixed size gives
// cores/CoresPerExecutor executors of that size; otherwise one executor per
// worker holds all the cores the app got there.
func TestRoundLaunches(t *testing.T) {
	workers := workersAt(4096, 10, 10, 10)
	cases := []struct {
		name   string
		policy string
		app    placement.App
		want   []placement.Launch
	}{
		{"spread, one executor per worker", "spread", unlimitedApp("a", 16, 0, 1024), []placement.Launch{
			{AppID: "a", WorkerID: "w1", Cores: 6, MemoryMB: 1024},
			{AppID: "a", WorkerID: "w2", Cores: 5, MemoryMB: 1024},
			{AppID: "a", WorkerID: "w3", Cores: 5, MemoryMB: 1024},
		}},
		{"pack, fixed size: several executors on one worker", "pack", unlimitedApp("a", 6, 2, 1024), []placement.Launch{
			{AppID: "a", WorkerID: "w1", Cores: 2, MemoryMB: 1024},
			{AppID: "a", WorkerID: "w1", Cores: 2, MemoryMB: 1024},
			{AppID: "a", WorkerID: "w1", Cores: 2, MemoryMB: 1024},
		}},
		{"spread, fixed size, memory-bound: 4 per worker", "spread", unlimitedApp("a", none, 2, 1024), repeatLaunches(
			placement.Launch{AppID: "a", Cores: 2, MemoryMB: 1024}, 4, "w1", "w2", "w3")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apps := []placement.App{tc.app}
			got := placement.StartExecutorsOnWorkers(apps, workers, mustNew(t, tc.policy, placement.Options{}))
			if !sameLaunches(got, tc.want) {
				t.Fatalf("launches %+v, want %+v", got, tc.want)
			}
			checkRound(t, apps, workers, 1, got)
		})
	}
}

// repeatLaunches is n copies of l on each worker.
func repeatLaunches(l placement.Launch, n int, workerIDs ...string) []placement.Launch {
	var out []placement.Launch
	for _, id := range workerIDs {
		for range n {
			l.WorkerID = id
			out = append(out, l)
		}
	}
	return out
}

// sameLaunches compares launches as multisets (the contract fixes what is
// launched, not the order of the list).
func sameLaunches(a, b []placement.Launch) bool {
	key := func(l placement.Launch) string {
		return fmt.Sprintf("%q", []any{l.AppID, l.WorkerID, l.Cores, l.MemoryMB})
	}
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		ka[i] = key(a[i])
	}
	for i := range b {
		kb[i] = key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// TestRoundFIFO: apps are served in the order given and each sees only what
// the apps before it left, in cores and in memory.
func TestRoundFIFO(t *testing.T) {
	workers := []placement.Worker{
		{ID: "w1", CoresFree: 4, MemoryFreeMB: 4096},
		{ID: "w2", CoresFree: 4, MemoryFreeMB: 1024},
	}
	first := unlimitedApp("first", 6, 0, 1024)
	second := unlimitedApp("second", 4, 0, 1024)
	third := unlimitedApp("third", 4, 0, 1024)
	p := mustNew(t, "pack", placement.Options{})
	got := placement.StartExecutorsOnWorkers([]placement.App{first, second, third}, workers, p)
	// first: w1 4 + w2 2 (w2's memory is now used up).
	// second: only w1 has memory left but no cores; w2 has 2 cores but no memory: nothing.
	want := []placement.Launch{
		{AppID: "first", WorkerID: "w1", Cores: 4, MemoryMB: 1024},
		{AppID: "first", WorkerID: "w2", Cores: 2, MemoryMB: 1024},
	}
	if !same(got, want) {
		t.Fatalf("launches %+v, want %+v", got, want)
	}

	// The order of the apps decides who gets the scarce cores.
	got = placement.StartExecutorsOnWorkers([]placement.App{second, first}, workers, p)
	want = []placement.Launch{
		{AppID: "second", WorkerID: "w1", Cores: 4, MemoryMB: 1024},
		{AppID: "first", WorkerID: "w2", Cores: 4, MemoryMB: 1024},
	}
	if !same(got, want) {
		t.Fatalf("reversed: launches %+v, want %+v", got, want)
	}
}

// TestRoundReordersBetweenApps: the worker order is applied to what is left
// for each app, not once for the round (Spark sorts usableWorkers per app).
func TestRoundReordersBetweenApps(t *testing.T) {
	workers := []placement.Worker{
		{ID: "w1", CoresFree: 8, MemoryFreeMB: 8192},
		{ID: "w2", CoresFree: 6, MemoryFreeMB: 8192},
	}
	apps := []placement.App{unlimitedApp("a", 4, 0, 512), unlimitedApp("b", 2, 0, 512)}
	// pack, cores-free-desc: a takes 4 on w1 (8 -> 4); then w2 (6) is first for b.
	got := placement.StartExecutorsOnWorkers(apps, workers, mustNew(t, "pack", placement.Options{}))
	want := []placement.Launch{
		{AppID: "a", WorkerID: "w1", Cores: 4, MemoryMB: 512},
		{AppID: "b", WorkerID: "w2", Cores: 2, MemoryMB: 512},
	}
	if !same(got, want) {
		t.Fatalf("launches %+v, want %+v", got, want)
	}
}

// TestRoundSkips: an app with no cores left, or at (or over) its executor
// limit, gets nothing and does not disturb the apps after it.
func TestRoundSkips(t *testing.T) {
	workers := workersAt(8192, 4, 4)
	atLimit := unlimitedApp("at-limit", 8, 0, 512)
	atLimit.ExecutorLimit, atLimit.Executors = 2, 2
	overLimit := unlimitedApp("over-limit", 8, 2, 512)
	overLimit.ExecutorLimit, overLimit.Executors = 1, 3
	zeroLimit := unlimitedApp("zero-limit", 8, 0, 512)
	zeroLimit.ExecutorLimit = 0
	apps := []placement.App{
		unlimitedApp("done", 0, 0, 512),
		unlimitedApp("too-small-for-one-executor", 1, 2, 512), // Spark: coresLeft < coresPerExecutor
		atLimit, overLimit, zeroLimit,
		unlimitedApp("last", 8, 0, 512),
	}
	for _, name := range placement.Names() {
		for _, unit := range []int{1, 4} {
			got := placement.StartExecutorsOnWorkers(apps, workers, mustNew(t, name, placement.Options{MinCoreUnit: unit}))
			checkRound(t, apps, workers, unit, got)
			for _, l := range got {
				if l.AppID != "last" {
					t.Errorf("%s unit %d: launched %+v for a skipped app", name, unit, l)
				}
			}
			if sumCores(got) != 8 {
				t.Errorf("%s unit %d: the last app got %d cores, want all 8", name, unit, sumCores(got))
			}
		}
	}
}

// TestRoundEmpty: no workers, no apps, nil slices: no launches, no panic.
func TestRoundEmpty(t *testing.T) {
	app := unlimitedApp("a", 4, 0, 512)
	for _, name := range placement.Names() {
		p := mustNew(t, name, placement.Options{})
		if got := placement.StartExecutorsOnWorkers(nil, nil, p); len(got) != 0 {
			t.Errorf("%s: nil, nil: %+v", name, got)
		}
		if got := placement.StartExecutorsOnWorkers([]placement.App{app}, nil, p); len(got) != 0 {
			t.Errorf("%s: no workers: %+v", name, got)
		}
		if got := placement.StartExecutorsOnWorkers(nil, workersAt(1024, 4), p); len(got) != 0 {
			t.Errorf("%s: no apps: %+v", name, got)
		}
		if got := p.Assign(app, nil); len(got) != 0 {
			t.Errorf("%s: Assign on no workers: %v", name, got)
		}
		p.Order(nil)
		p.Order([]placement.Worker{})
	}
}

// TestRoundDoesNotModifyInputs: the caller's slices come back as they went in
// (StartExecutorsOnWorkers works on copies; Assign does not touch workers).
func TestRoundDoesNotModifyInputs(t *testing.T) {
	workers := []placement.Worker{
		{ID: "w3", CoresFree: 2, MemoryFreeMB: 4096},
		{ID: "w1", CoresFree: 9, MemoryFreeMB: 1024},
		{ID: "w2", CoresFree: 5, MemoryFreeMB: 8192},
	}
	apps := []placement.App{unlimitedApp("a", 7, 0, 1024), unlimitedApp("b", 6, 2, 512), unlimitedApp("c", none, 0, 256)}
	for _, name := range placement.Names() {
		for _, order := range allOrders {
			p := mustNew(t, name, placement.Options{Order: order, MinCoreUnit: 2})
			apps0, workers0 := cloneCluster(apps, workers)
			launches := placement.StartExecutorsOnWorkers(apps, workers, p)
			if len(launches) == 0 {
				t.Fatalf("%s/%s: nothing launched; the check below would prove nothing", name, order)
			}
			if !same(apps, apps0) || !same(workers, workers0) {
				t.Fatalf("%s/%s: StartExecutorsOnWorkers modified its input\napps %+v\nworkers %+v", name, order, apps, workers)
			}
			for _, app := range apps {
				if p.Assign(app, workers); !same(workers, workers0) {
					t.Fatalf("%s/%s: Assign modified its workers: %+v", name, order, workers)
				}
			}
		}
	}
}

// TestRoundDuplicateWorkerIDs: a worker listed twice is one worker. Its
// capacity is that of its first entry; the repeat adds nothing.
func TestRoundDuplicateWorkerIDs(t *testing.T) {
	workers := []placement.Worker{
		{ID: "w1", CoresFree: 4, MemoryFreeMB: 2048},
		{ID: "w2", CoresFree: 2, MemoryFreeMB: 2048},
		{ID: "w1", CoresFree: 64, MemoryFreeMB: 65536},
		{ID: "w1", CoresFree: 4, MemoryFreeMB: 2048},
	}
	deduped := workers[:2]
	apps := []placement.App{unlimitedApp("a", none, 0, 1024), unlimitedApp("b", none, 1, 512)}
	for _, name := range placement.Names() {
		for _, unit := range []int{1, 2} {
			p := mustNew(t, name, placement.Options{MinCoreUnit: unit})
			got := placement.StartExecutorsOnWorkers(apps, workers, p)
			checkRound(t, apps, workers, unit, got) // counts w1 once, at 4 cores / 2048 MB
			if byW := coresByWorker(got); byW["w1"] > 4 {
				t.Errorf("%s unit %d: %d cores on w1, which has 4", name, unit, byW["w1"])
			}
			if want := placement.StartExecutorsOnWorkers(apps, deduped, p); !same(got, want) {
				t.Errorf("%s unit %d: with repeats %+v, without %+v", name, unit, got, want)
			}
		}
	}
}

// TestRoundBadValues: negative and extreme values never panic, never
// over-commit and never grant more than asked.
func TestRoundBadValues(t *testing.T) {
	workers := []placement.Worker{
		{ID: "neg-cores", CoresFree: -5, MemoryFreeMB: 8192},
		{ID: "neg-mem", CoresFree: 8, MemoryFreeMB: -1},
		{ID: "zero", CoresFree: 0, MemoryFreeMB: 0},
		{ID: "ok1", CoresFree: 6, MemoryFreeMB: 4096},
		{ID: "ok2", CoresFree: 3, MemoryFreeMB: 2048},
		{ID: "", CoresFree: 2, MemoryFreeMB: 2048}, // an empty ID is still an ID
	}
	apps := []placement.App{
		{ID: "neg-left", CoresLeft: -3, ExecutorLimit: placement.Unlimited},
		{ID: "neg-cpe", CoresLeft: 4, CoresPerExecutor: -2, MemoryPerExecutorMB: 256, ExecutorLimit: placement.Unlimited},
		{ID: "neg-mem", CoresLeft: 2, MemoryPerExecutorMB: -100, ExecutorLimit: placement.Unlimited},
		{ID: "neg-limit", CoresLeft: 2, ExecutorLimit: -1},
		{ID: "neg-execs", CoresLeft: 2, ExecutorLimit: 1, Executors: -4},
		{ID: "huge-mem", CoresLeft: 2, MemoryPerExecutorMB: math.MaxInt, ExecutorLimit: placement.Unlimited},
		{ID: "unlimited", CoresLeft: placement.Unlimited, CoresPerExecutor: 0, MemoryPerExecutorMB: 512, ExecutorLimit: placement.Unlimited, Executors: 7},
		{ID: "unlimited-fixed", CoresLeft: placement.Unlimited, CoresPerExecutor: 2, MemoryPerExecutorMB: 512, ExecutorLimit: placement.Unlimited},
	}
	for _, name := range placement.Names() {
		for _, unit := range []int{0, 1, 3, 8, math.MaxInt} {
			p := mustNew(t, name, placement.Options{MinCoreUnit: unit})
			apps0, workers0 := cloneCluster(apps, workers)
			got := placement.StartExecutorsOnWorkers(apps, workers, p)
			checkRound(t, apps, workers, unit, got)
			for _, l := range got {
				switch l.WorkerID {
				case "neg-cores", "neg-mem", "zero":
					t.Errorf("%s unit %d: launch %+v on a worker with nothing free", name, unit, l)
				}
				if l.AppID == "neg-left" || l.AppID == "neg-limit" || l.AppID == "huge-mem" {
					t.Errorf("%s unit %d: launch %+v for an app that can have nothing", name, unit, l)
				}
			}
			if !same(apps, apps0) || !same(workers, workers0) {
				t.Errorf("%s unit %d: inputs modified", name, unit)
			}
			for _, app := range apps {
				cores := p.Assign(app, workers)
				if bad := assignViolations(app, workers, unit, cores); len(bad) > 0 {
					t.Errorf("%s unit %d: Assign(%+v) = %v: %v", name, unit, app, cores, bad)
				}
			}
		}
	}
}

// TestAssignUnlimitedEverything: the sum of free cores saturates instead of
// overflowing, and Unlimited CoresLeft with Unlimited ExecutorLimit is fine.
func TestAssignUnlimitedEverything(t *testing.T) {
	workers := []placement.Worker{
		{ID: "a", CoresFree: math.MaxInt - 1, MemoryFreeMB: 1},
		{ID: "b", CoresFree: math.MaxInt - 1, MemoryFreeMB: 1},
	}
	app := placement.App{ID: "x", CoresLeft: placement.Unlimited, CoresPerExecutor: math.MaxInt / 2, MemoryPerExecutorMB: 1, ExecutorLimit: placement.Unlimited}
	for _, name := range placement.Names() {
		p := mustNew(t, name, placement.Options{})
		cores := p.Assign(app, workers)
		if bad := assignViolations(app, workers, 1, cores); len(bad) > 0 {
			t.Errorf("%s: %v: %v", name, cores, bad)
		}
		launches := placement.StartExecutorsOnWorkers([]placement.App{app}, workers, p)
		checkRound(t, []placement.App{app}, workers, 1, launches)
		if len(launches) != 2 {
			t.Errorf("%s: %+v, want one huge executor per worker", name, launches)
		}
	}
}

// liar is a policy that breaks its own contract: the round must still not
// over-commit (it clamps whatever Assign says).
type liar struct {
	order  func([]placement.Worker)
	assign func(placement.App, []placement.Worker) []int
}

func (l liar) Name() string                                        { return "liar" }
func (l liar) Order(ws []placement.Worker)                         { l.order(ws) }
func (l liar) Assign(a placement.App, ws []placement.Worker) []int { return l.assign(a, ws) }

func TestRoundClampsAWrongPolicy(t *testing.T) {
	type cluster struct {
		apps    []placement.App
		workers []placement.Worker
	}
	clusters := []cluster{
		{ // scarce: apps compete for cores and memory
			apps: []placement.App{
				unlimitedApp("a", 5, 0, 1024),
				unlimitedApp("b", none, 2, 512),
				{ID: "c", CoresLeft: none, CoresPerExecutor: 1, MemoryPerExecutorMB: 256, ExecutorLimit: 3, Executors: 1},
				unlimitedApp("d", none, 0, 0),
			},
			workers: []placement.Worker{
				{ID: "w1", CoresFree: 4, MemoryFreeMB: 2048},
				{ID: "w2", CoresFree: 7, MemoryFreeMB: 1024},
				{ID: "w3", CoresFree: 1, MemoryFreeMB: 8192},
			},
		},
		{ // plenty: only the apps' own limits stop a greedy policy
			apps: []placement.App{
				{ID: "limit-2", CoresLeft: none, CoresPerExecutor: 1, MemoryPerExecutorMB: 256, ExecutorLimit: 2},
				{ID: "limit-1", CoresLeft: none, MemoryPerExecutorMB: 256, ExecutorLimit: 4, Executors: 3},
				unlimitedApp("left-3", 3, 0, 256),
				unlimitedApp("left-5-by-2", 5, 2, 256),
			},
			workers: workersAt(16384, 16, 16, 16),
		},
		{ // memory-bound: 16 cores but memory for two 512 MB executors
			apps:    []placement.App{unlimitedApp("by-1", none, 1, 512), unlimitedApp("by-3", none, 3, 256)},
			workers: workersAt(1024, 16, 16),
		},
	}
	reverse := func(ws []placement.Worker) { slices.Reverse(ws) }
	sortByID := func(ws []placement.Worker) {
		slices.SortFunc(ws, func(a, b placement.Worker) int { return cmp.Compare(a.ID, b.ID) })
	}
	fill := func(v int, extra int) func(placement.App, []placement.Worker) []int {
		return func(_ placement.App, ws []placement.Worker) []int {
			out := make([]int, len(ws)+extra)
			for i := range out {
				out[i] = v
			}
			return out
		}
	}
	liars := map[string]liar{
		"everything everywhere":  {sortByID, fill(math.MaxInt, 0)},
		"negative":               {sortByID, fill(-7, 0)},
		"too long":               {reverse, fill(3, 5)},
		"nil":                    {reverse, func(placement.App, []placement.Worker) []int { return nil }},
		"reorders on every call": {reverse, fill(5, 0)},
		"odd sizes":              {sortByID, fill(3, 0)},
	}
	for name, p := range liars {
		for i, c := range clusters {
			t.Run(fmt.Sprintf("%s/cluster %d", name, i), func(t *testing.T) {
				apps0, workers0 := cloneCluster(c.apps, c.workers)
				got := placement.StartExecutorsOnWorkers(c.apps, c.workers, p)
				checkRound(t, c.apps, c.workers, 1, got)
				if !same(c.apps, apps0) || !same(c.workers, workers0) {
					t.Fatalf("inputs modified")
				}
			})
		}
	}
}
