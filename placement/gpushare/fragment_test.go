package gpushare

import (
	"math"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// FGD's fragmentation on the paper's own kind of example: typical shapes
// of a 500-share and a 1-GPU executor (half each, 8 cores), and frag-fit's
// fill view of the same workers.
func TestFragment(t *testing.T) {
	shapes := []shape{{cores: 8, milli: 500, gpus: 1, weight: 0.5}, {cores: 8, milli: W, gpus: 1, weight: 0.5}}
	for _, tc := range []struct {
		cores int
		free  []int
		fgd   float64
		fill  float64
	}{
		{16, []int{W, W}, 0, 0.5 * 1000},                      // both fit; but cores for two shares only: a GPU idle for them
		{16, []int{300, W}, 0.5 * 300 * 2, 0.5*300 + 0.5*300}, // 300 suits neither shape
		{4, []int{W, W}, 2000, 2000},                          // too few cores: everything is fragment
		{8, []int{W, W}, 0, 0.5*1500 + 0.5*1000},              // cores for one executor: fill sees the rest stranded
		{16, []int{}, 0, 0},
	} {
		n := node{cores: tc.cores, free: tc.free}
		if got := fgdFragment(shapes, n); math.Abs(got-tc.fgd) > 1e-9 {
			t.Errorf("fgdFragment(%d cores, %v) = %v, want %v", tc.cores, tc.free, got, tc.fgd)
		}
		if got := fillFragment(shapes, n); math.Abs(got-tc.fill) > 1e-9 {
			t.Errorf("fillFragment(%d cores, %v) = %v, want %v", tc.cores, tc.free, got, tc.fill)
		}
	}
}

// frag-fit's shapes ask memory: a worker with the GPUs and cores but not
// the memory for a shape strands the GPU for it, in both views. Shapes: a
// 400-share asking 10 GB (weight 0.6) and a 1-GPU executor asking 40 GB
// (0.4), 4 cores each.
func TestFragmentSeesMemory(t *testing.T) {
	shapes := []shape{{cores: 4, milli: 400, gpus: 1, mem: 10, weight: 0.6}, {cores: 4, milli: W, gpus: 1, mem: 40, weight: 0.4}}
	for _, tc := range []struct {
		mem        int
		free       []int
		next, fill float64
	}{
		// Memory for everything: next sees, for the 1-GPU shape, the 700
		// of GPU 0; fill fits three shares (1 + 2: 500 left) and one 1-GPU
		// executor (700 left).
		{100, []int{700, W}, 0.4 * 700, 0.6*500 + 0.4*700},
		// 20 GB: the 1-GPU shape does not fit (all 1,700 fragment for it),
		// and memory holds two shares, not three (900 left).
		{20, []int{700, W}, 0.4 * 1700, 0.6*900 + 0.4*1700},
		// 5 GB: nothing fits.
		{5, []int{700, W}, 1700, 1700},
	} {
		n := node{cores: 64, mem: tc.mem, free: tc.free}
		if got := fgdFragment(shapes, n); math.Abs(got-tc.next) > 1e-9 {
			t.Errorf("fgdFragment(%d MB, %v) = %v, want %v", tc.mem, tc.free, got, tc.next)
		}
		if got := fillFragment(shapes, n); math.Abs(got-tc.fill) > 1e-9 {
			t.Errorf("fillFragment(%d MB, %v) = %v, want %v", tc.mem, tc.free, got, tc.fill)
		}
	}
	// The blend: a share weighs FGD's view 0.9, whole GPUs and none 0.5.
	d := fragments{next: 100, fill: 300}
	if got := increase(request{milli: 400, gpus: 1}, d); math.Abs(got-120) > 1e-9 {
		t.Errorf("a share's increase of %+v = %v, want 0.9·100 + 0.1·300", d, got)
	}
	if got := increase(request{milli: W, gpus: 2}, d); math.Abs(got-200) > 1e-9 {
		t.Errorf("whole GPUs' increase of %+v = %v, want the mean", d, got)
	}
}

// The typical shapes: grouped, the most frequent covering 95%, weights
// normalised.
func TestTypicalShapes(t *testing.T) {
	var workload []placement.TaskShape
	add := func(n, cores, gpuMilli int) {
		for range n {
			var res map[string]int
			if gpuMilli > 0 {
				res = map[string]int{GPU: gpuMilli}
			}
			workload = append(workload, placement.TaskShape{Cores: cores, Resources: res, Weight: 1})
		}
	}
	add(60, 8, W)
	add(30, 4, 500)
	add(6, 16, 0)
	add(4, 64, 8*W) // beyond the 95%: left out
	shapes := typicalShapes(workload)
	if len(shapes) != 3 {
		t.Fatalf("shapes %+v, want the three most frequent", shapes)
	}
	sum := 0.0
	for _, s := range shapes {
		sum += s.weight
	}
	if math.Abs(sum-1) > 1e-9 || shapes[0].cores != 8 || math.Abs(shapes[0].weight-60.0/96) > 1e-9 {
		t.Errorf("shapes %+v: want weights normalised over the 96 kept, 8-core first", shapes)
	}
}

// frag-fit learns how much memory a shape asks from the apps it places, and
// then keeps a CPU-only executor off the worker whose GPUs its memory would
// strand; FGD, blind to memory, takes the first worker.
func TestFragFitLearnsMemory(t *testing.T) {
	workload := []placement.TaskShape{{Cores: 8000, Resources: map[string]int{GPU: W}, Weight: 9}, {Cores: 16000, Weight: 1}}
	gpuApp := placement.App{ID: "g", CoresLeft: 8000, CoresPerExecutor: 8000, MemoryPerExecutorMB: 30000, ExecutorLimit: 1, ResourcesPerExecutor: map[string]int{GPU: W}}
	cpuApp := placement.App{ID: "c", CoresLeft: 16000, CoresPerExecutor: 16000, MemoryPerExecutorMB: 30000, ExecutorLimit: 1}
	elsewhere := []placement.Worker{{ID: "x", CoresFree: 64000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W}}}}
	workers := []placement.Worker{
		{ID: "memory-poor", CoresFree: 64000, MemoryFreeMB: 40000, Resources: map[string][]int{GPU: {W, W}}},
		{ID: "memory-rich", CoresFree: 64000, MemoryFreeMB: 200000, Resources: map[string][]int{GPU: {W, W}}},
	}
	for name, want := range map[string]string{"frag-fit": "memory-rich", "fgd": "memory-poor"} {
		p, _ := placement.New(name, placement.Options{Workload: workload})
		placement.PlaceOne(gpuApp, elsewhere, p)
		if l, _ := placement.PlaceOne(cpuApp, workers, p); l.WorkerID != want {
			t.Errorf("%s put 30 GB of CPU-only executor on %s, want %s", name, l.WorkerID, want)
		}
	}
	if shapes := func() []shape {
		p, _ := placement.New("frag-fit", placement.Options{Workload: workload})
		placement.PlaceOne(gpuApp, elsewhere, p)
		return p.(*fragFit).frag.shapes
	}(); shapes[0].mem != 30000 || shapes[1].mem != 0 {
		t.Errorf("shapes after one 30 GB 1-GPU app: %+v, want that shape at 30,000 MB and the other unknown (0)", shapes)
	}
}

// Without a workload, FGD and frag-fit learn it from the apps they see.
func TestLearnsTheWorkload(t *testing.T) {
	p, _ := placement.New("frag-fit", placement.Options{})
	workers := []placement.Worker{{ID: "w", CoresFree: 64000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W, W}}}}
	app := placement.App{ID: "a", CoresLeft: 8000, CoresPerExecutor: 8000, ExecutorLimit: 1, ResourcesPerExecutor: map[string]int{GPU: W}}
	if _, at := placement.PlaceOne(app, workers, p); at != 0 {
		t.Fatal("nothing placed")
	}
	if shapes := p.(*fragFit).frag.shapes; len(shapes) != 1 || shapes[0].milli != W || shapes[0].cores != 8000 {
		t.Errorf("learnt shapes %+v", shapes)
	}
}
