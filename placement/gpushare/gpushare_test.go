package gpushare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

const W = placement.Whole

var policies = []string{"random", "dot-product", "gpu-clustering", "gpu-packing", "gpu-best-fit", "fgd", "frag-fit"}

func TestPoliciesAreRegistered(t *testing.T) {
	for _, name := range policies {
		p, err := placement.New(name, placement.Options{Seed: 1})
		if err != nil || p.Name() != name {
			t.Errorf("New(%q) = %v, %v", name, p, err)
		}
	}
}

// randomGPUCluster: workers of 1–8 GPUs, some shared, cores and memory;
// apps asking no GPU, a share, or 1, 2, 4 or 8 whole GPUs.
func randomGPUCluster(r *rand.Rand) ([]placement.App, []placement.Worker) {
	workers := make([]placement.Worker, 1+r.IntN(12))
	for i := range workers {
		gpus := make([]int, []int{1, 2, 4, 8}[r.IntN(4)])
		for g := range gpus {
			gpus[g] = []int{0, 190, 530, W, W, W}[r.IntN(6)]
		}
		workers[i] = placement.Worker{ID: fmt.Sprintf("w%02d", i), CoresFree: r.IntN(65) * 1000, MemoryFreeMB: r.IntN(9) * 16384,
			Resources: map[string][]int{GPU: gpus}, Tags: map[string]int{}}
		if r.IntN(3) == 0 {
			workers[i].Tags[[]string{"gpu=share", "gpu=1", "gpu=2"}[r.IntN(3)]] = 1 + r.IntN(3)
		}
	}
	apps := make([]placement.App, 1+r.IntN(6))
	for i := range apps {
		cores := []int{1000, 4000, 8000, 12000, 32000}[r.IntN(5)]
		a := placement.App{ID: fmt.Sprintf("a%d", i), CoresLeft: cores * (1 + r.IntN(4)), CoresPerExecutor: cores,
			MemoryPerExecutorMB: []int{0, 1024, 16384}[r.IntN(3)], ExecutorLimit: placement.Unlimited}
		if r.IntN(4) == 0 {
			a.CoresPerExecutor = 0 // one executor per worker, of the unit
		}
		switch r.IntN(4) {
		case 1:
			a.ResourcesPerExecutor = map[string]int{GPU: []int{110, 250, 460, 810}[r.IntN(4)]}
		case 2, 3:
			a.ResourcesPerExecutor = map[string]int{GPU: []int{1, 1, 2, 4, 8}[r.IntN(5)] * W}
		}
		apps[i] = a
	}
	return apps, workers
}

// Every policy's decisions respect every resource: a round never takes more
// cores, memory or GPU than a worker has free, a share lands on one GPU
// that holds it, whole GPUs are distinct and wholly free; and the caller's
// workers are left alone. Checked on random clusters, through rounds and
// through one-at-a-time placements applied in turn.
func TestPoliciesRespectEveryResource(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	placed := map[string]int{}
	for i := range 400 {
		apps, workers := randomGPUCluster(r)
		for _, name := range policies {
			p, err := placement.New(name, placement.Options{Seed: uint64(i), MinCoreUnit: 4000})
			if err != nil {
				t.Fatal(err)
			}
			before := clone(workers)
			launches := placement.StartExecutorsOnWorkers(apps, workers, p)
			if !equalWorkers(workers, before) {
				t.Fatalf("case %d %s: the round modified its workers", i, name)
			}
			if err := applyAll(clone(workers), apps, launches); err != nil {
				t.Fatalf("case %d %s: round %+v\nworkers %+v\napps %+v: %v", i, name, launches, workers, apps, err)
			}
			// One at a time, applied as a replay does.
			state := clone(workers)
			for _, a := range apps {
				a.ExecutorLimit, a.CoresLeft = 1, max(a.CoresPerExecutor, 4000)
				l, at := placement.PlaceOne(a, state, p)
				if at < 0 {
					continue
				}
				if err := applyAll(state, []placement.App{a}, []placement.Launch{l}); err != nil {
					t.Fatalf("case %d %s: PlaceOne %+v: %v", i, name, l, err)
				}
				placed[name]++
			}
		}
	}
	for _, name := range policies {
		if placed[name] < 200 {
			t.Errorf("%s placed only %d executors: the generator is broken", name, placed[name])
		}
	}
}

func clone(ws []placement.Worker) []placement.Worker {
	out := slices.Clone(ws)
	for i := range out {
		res := map[string][]int{}
		for k, v := range out[i].Resources {
			res[k] = slices.Clone(v)
		}
		out[i].Resources = res
		tags := map[string]int{}
		for k, v := range out[i].Tags {
			tags[k] = v
		}
		out[i].Tags = tags
	}
	return out
}

func equalWorkers(a, b []placement.Worker) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].CoresFree != b[i].CoresFree || a[i].MemoryFreeMB != b[i].MemoryFreeMB ||
			!slices.Equal(a[i].Resources[GPU], b[i].Resources[GPU]) || len(a[i].Tags) != len(b[i].Tags) {
			return false
		}
	}
	return true
}

// applyAll takes launches off the workers, failing on any over-commit.
func applyAll(ws []placement.Worker, apps []placement.App, launches []placement.Launch) error {
	byID := map[string]*placement.Worker{}
	for i := range ws {
		byID[ws[i].ID] = &ws[i]
	}
	appByID := map[string]placement.App{}
	for _, a := range apps {
		appByID[a.ID] = a
	}
	for _, l := range launches {
		w, a := byID[l.WorkerID], appByID[l.AppID]
		if w == nil {
			return fmt.Errorf("launch on unknown worker %q", l.WorkerID)
		}
		if w.CoresFree -= l.Cores; w.CoresFree < 0 {
			return fmt.Errorf("worker %s over-committed: cores", w.ID)
		}
		if w.MemoryFreeMB -= l.MemoryMB; w.MemoryFreeMB < 0 {
			return fmt.Errorf("worker %s over-committed: memory", w.ID)
		}
		amount := a.ResourcesPerExecutor[GPU]
		addrs := l.Resources[GPU]
		switch {
		case amount == 0 && len(addrs) != 0:
			return fmt.Errorf("launch %+v: GPUs never asked for", l)
		case amount > 0 && amount < W && len(addrs) != 1:
			return fmt.Errorf("launch %+v: a share on %d GPUs", l, len(addrs))
		case amount >= W && len(addrs) != amount/W:
			return fmt.Errorf("launch %+v: %d whole GPUs asked", l, amount/W)
		}
		seen := map[int]bool{}
		for _, g := range addrs {
			if seen[g] {
				return fmt.Errorf("launch %+v: GPU %d twice", l, g)
			}
			seen[g] = true
			if w.Resources[GPU][g] -= min(amount, W); w.Resources[GPU][g] < 0 {
				return fmt.Errorf("worker %s over-committed: GPU %d", w.ID, g)
			}
		}
	}
	return nil
}

// gpu-packing's bands, from the paper's simulator.
func TestPackingScore(t *testing.T) {
	share := request{milli: 460, gpus: 1}
	one := request{milli: W, gpus: 1}
	for _, tc := range []struct {
		r    request
		free []int
		want int64
	}{
		{one, []int{W, W, W, W, W, W, W, W}, 25}, // an idle 8-GPU worker: 33 - 8
		{one, []int{W, W}, 31},                   // an idle 2-GPU worker: 33 - 2
		{one, []int{0, W, W}, 49},                // free GPUs of a worker in use: 50 - 1
		{share, []int{500, W}, 95},               // a shared GPU with 500 left: 100 - 50/10
		{share, []int{W, 900}, 91},               // the fullest GPU that holds it: 900 → 100 - 90/10
		{request{}, []int{W}, 0},                 // no GPU: no preference
	} {
		if got := packingScore(tc.r, tc.free); got != tc.want {
			t.Errorf("packingScore(%+v, %v) = %d, want %d", tc.r, tc.free, got, tc.want)
		}
	}
}

// frag-fit, FGD and the packers keep a share on the GPU already shared
// when the cluster is otherwise idle, and frag-fit sends a CPU-only executor
// where its cores strand no GPU.
func TestHandPickedDecisions(t *testing.T) {
	workload := []placement.TaskShape{
		{Cores: 8000, Resources: map[string]int{GPU: W}, Weight: 5},
		{Cores: 4000, Resources: map[string]int{GPU: 500}, Weight: 4},
		{Cores: 16000, Weight: 1},
	}
	workers := []placement.Worker{
		{ID: "idle", CoresFree: 64000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W, W}}, Tags: map[string]int{}},
		{ID: "shared", CoresFree: 60000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {500, W}}, Tags: map[string]int{"gpu=share": 1}},
	}
	share := placement.App{ID: "s", CoresLeft: 4000, CoresPerExecutor: 4000, ExecutorLimit: 1, ResourcesPerExecutor: map[string]int{GPU: 500}}
	for _, name := range []string{"fgd", "frag-fit", "gpu-packing", "gpu-clustering", "gpu-best-fit"} {
		p, _ := placement.New(name, placement.Options{Workload: workload})
		l, at := placement.PlaceOne(share, workers, p)
		if at != 1 || l.Resources[GPU][0] != 0 {
			t.Errorf("%s put the share on %s GPU %v, want shared GPU 0", name, l.WorkerID, l.Resources[GPU])
		}
	}
	cpuRich := []placement.Worker{
		{ID: "gpu-heavy", CoresFree: 20000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W, W}}},
		{ID: "cpu-rich", CoresFree: 100000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W, W}}},
	}
	cpuOnly := placement.App{ID: "c", CoresLeft: 16000, CoresPerExecutor: 16000, ExecutorLimit: 1}
	p, _ := placement.New("frag-fit", placement.Options{Workload: workload})
	if l, _ := placement.PlaceOne(cpuOnly, cpuRich, p); l.WorkerID != "cpu-rich" {
		t.Errorf("frag-fit put 16 CPU-only cores on %s, leaving its 2 GPUs 4 cores", l.WorkerID)
	}
}

// The GPU a share takes, as the paper's runs chose it: random draws a
// usable worker uniformly (never an unusable one) and a GPU uniformly among
// those that hold the share (-gpusel random); the scoring baselines take
// the fullest GPU that holds it (-gpusel best), the lowest index of equals.
func TestShareGPUSelection(t *testing.T) {
	share := placement.App{ID: "s", CoresLeft: 1000, CoresPerExecutor: 1000, ExecutorLimit: 1, ResourcesPerExecutor: map[string]int{GPU: 300}}
	workers := []placement.Worker{
		{ID: "a", CoresFree: 8000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W, 300, 100, 600}}},
		{ID: "full", CoresFree: 8000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {200, 100}}},
		{ID: "b", CoresFree: 8000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {300}}},
	}
	const draws = 3000
	worker, gpu := map[string]int{}, map[int]int{}
	for seed := range uint64(draws) {
		p, _ := placement.New("random", placement.Options{Seed: seed})
		l, at := placement.PlaceOne(share, workers, p)
		if at < 0 {
			t.Fatalf("seed %d: nothing placed", seed)
		}
		worker[l.WorkerID]++
		if l.WorkerID == "a" {
			gpu[l.Resources[GPU][0]]++
		}
	}
	if worker["full"] != 0 || math.Abs(float64(worker["a"])/draws-0.5) > 0.05 {
		t.Errorf("random's workers over %d draws: %v, want a and b half each", draws, worker)
	}
	for g, want := range map[int]float64{0: 1.0 / 3, 1: 1.0 / 3, 2: 0, 3: 1.0 / 3} {
		if got := float64(gpu[g]) / float64(worker["a"]); math.Abs(got-want) > 0.05 {
			t.Errorf("random put %.2f of the shares on GPU %d (free %d), want %.2f: %v", got, g, workers[0].Resources[GPU][g], want, gpu)
		}
	}
	for _, name := range []string{"dot-product", "gpu-clustering", "gpu-packing", "gpu-best-fit"} {
		p, _ := placement.New(name, placement.Options{})
		one := []placement.Worker{workers[0]}
		if l, _ := placement.PlaceOne(share, one, p); !slices.Equal(l.Resources[GPU], []int{1}) {
			t.Errorf("%s put the share on GPU %v of %v, want 1 (the fullest that holds it)", name, l.Resources[GPU], one[0].Resources[GPU])
		}
	}
}
