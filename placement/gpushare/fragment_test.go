package gpushare

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// FGD's fragmentation on the paper's own kind of example: typical shapes
// of a 500-share and a 1-GPU executor (half each, 8 cores), and frag-fit's
// strand view of the same workers at 6 cores and 30 GB per GPU.
func TestFragment(t *testing.T) {
	shapes := []shape{{cores: 8, milli: 500, gpus: 1, weight: 0.5}, {cores: 8, milli: W, gpus: 1, weight: 0.5}}
	ratio := strandRatios{cores: 6.0 / W, mem: 30.0 / W}
	for _, tc := range []struct {
		cores, mem int
		free       []int
		fgd        float64
		strand     float64
	}{
		{16, 60, []int{W, W}, 0, 0},                // both fit; 16 cores feed 2.67 GPUs, 60 GB exactly 2
		{12, 60, []int{W, W}, 0, 0},                // cores and memory for both GPUs at the mix's ratios
		{12, 30, []int{W, W}, 0, 1000},             // memory for one GPU: the other is stranded
		{16, 60, []int{300, W}, 0.5 * 300 * 2, 0},  // 300 suits neither shape; 1.3 GPUs are fed
		{4, 60, []int{W, W}, 2000, 2000 - 4.0/6*W}, // too few cores for any executor: all is fragment to FGD
		{6, 1000, []int{W, W}, 2000, 1000},         // cores for one GPU's worth: FGD sees no executor fit, strand half
		{16, 60, []int{}, 0, 0},
	} {
		n := node{cores: tc.cores, mem: tc.mem, free: tc.free}
		if got := fgdFragment(shapes, n); math.Abs(got-tc.fgd) > 1e-9 {
			t.Errorf("fgdFragment(%d cores, %v) = %v, want %v", tc.cores, tc.free, got, tc.fgd)
		}
		want := max(tc.strand, 0)
		if got := strandFragment(shapes, ratio, n); math.Abs(got-want) > 1e-6 {
			t.Errorf("strandFragment(%d cores, %d GB, %v) = %v, want %v", tc.cores, tc.mem, tc.free, got, want)
		}
	}
	// frag-fit's Δ adds the views' increases.
	if got := increase(fragments{next: 100, strand: 300}); math.Abs(got-400) > 1e-9 {
		t.Errorf("increase = %v, want 100 + 300", got)
	}
}

// A shape constrained to some workers: where it may not go, all the free
// GPU is fragment for it (in both views), as the paper's simulator counts
// a node whose GPU model a typical task does not accept.
func TestFragmentOfConstrainedShapes(t *testing.T) {
	shapes := []shape{{cores: 4, milli: W, gpus: 1, weight: 0.5}, {cores: 4, milli: W, gpus: 1, weight: 0.5, group: 1}}
	ratio := strandRatios{cores: 4.0 / W}
	for _, tc := range []struct {
		access       uint64
		next, strand float64
	}{
		{1, 0, 0},
		{0, 0.5 * 2000, 0.5 * 2000},
	} {
		n := node{cores: 64, free: []int{W, W}, access: tc.access}
		if got := fgdFragment(shapes, n); got != tc.next {
			t.Errorf("access %b: fgdFragment = %v, want %v", tc.access, got, tc.next)
		}
		if got := strandFragment(shapes, ratio, n); got != tc.strand {
			t.Errorf("access %b: strandFragment = %v, want %v", tc.access, got, tc.strand)
		}
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
	shapes, groups := typicalShapes(taskShapes(workload))
	if len(shapes) != 3 {
		t.Fatalf("shapes %+v, want the three most frequent", shapes)
	}
	sum := 0.0
	for _, s := range shapes {
		sum += s.weight
	}
	if math.Abs(sum-1) > 1e-9 || shapes[0].cores != 8 || math.Abs(shapes[0].weight-60.0/96) > 1e-9 || groups != nil {
		t.Errorf("shapes %+v: want weights normalised over the 96 kept, 8-core first, no group", shapes)
	}
	// Constrained shapes are grouped by their constraint as by their size:
	// the simulator keys its typical tasks by GPU model too.
	fits := func(string) bool { return true }
	var constrained []Shape
	for i, t := range workload {
		c := Shape{TaskShape: t}
		if i%2 == 1 && t.Resources != nil {
			c.Constraint, c.Fits = "T4", fits
		}
		constrained = append(constrained, c)
	}
	shapes, groups = typicalShapes(constrained)
	if len(shapes) != 5 || len(groups) != 1 {
		t.Errorf("constrained shapes %+v, %d groups: want the three kinds split by constraint, one group", shapes, len(groups))
	}
}

// frag-fit's strand view: the workload's cores and memory per GPU come
// from the workload when it says them (SetWorkload), else the memory from
// the GPU apps placed so far. With 30 GB per GPU learnt, a CPU-only
// executor goes where its memory strands no GPU; FGD, blind to memory,
// takes the first worker.
func TestFragFitLearnsMemory(t *testing.T) {
	workload := []placement.TaskShape{{Cores: 8000, Resources: map[string]int{GPU: W}, Weight: 9}, {Cores: 16000, Weight: 1}}
	gpuApp := placement.App{ID: "g", CoresLeft: 8000, CoresPerExecutor: 8000, MemoryPerExecutorMB: 30000, ExecutorLimit: 1, ResourcesPerExecutor: map[string]int{GPU: W}}
	cpuApp := placement.App{ID: "c", CoresLeft: 16000, CoresPerExecutor: 16000, MemoryPerExecutorMB: 30000, ExecutorLimit: 1}
	elsewhere := []placement.Worker{{ID: "x", CoresFree: 64000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W}}}}
	workers := []placement.Worker{
		{ID: "memory-poor", CoresFree: 64000, MemoryFreeMB: 60000, Resources: map[string][]int{GPU: {W, W}}},
		{ID: "memory-rich", CoresFree: 64000, MemoryFreeMB: 200000, Resources: map[string][]int{GPU: {W, W}}},
	}
	for name, want := range map[string]string{"frag-fit": "memory-rich", "fgd": "memory-poor"} {
		p, _ := placement.New(name, placement.Options{Workload: workload})
		placement.PlaceOne(gpuApp, elsewhere, p)
		if l, _ := placement.PlaceOne(cpuApp, workers, p); l.WorkerID != want {
			t.Errorf("%s put 30 GB of CPU-only executor on %s, want %s", name, l.WorkerID, want)
		}
	}
	p, _ := placement.New("frag-fit", placement.Options{Workload: workload})
	if r := p.(*fragFit).frag.strand; r.cores != 8 || r.mem != 0 {
		t.Errorf("ratios before any app: %+v, want 8 cores per thousandth and no memory", r)
	}
	placement.PlaceOne(gpuApp, elsewhere, p)
	if r := p.(*fragFit).frag.strand; r.mem != 30 {
		t.Errorf("ratios after one 30 GB 1-GPU app: %+v, want 30 MB per thousandth", r)
	}
	p.(WorkloadSetter).SetWorkload([]Shape{{TaskShape: workload[0], MemoryMB: 20000}, {TaskShape: workload[1], MemoryMB: 90000}})
	placement.PlaceOne(gpuApp, elsewhere, p)
	if r := p.(*fragFit).frag.strand; r.mem != 20 || !r.memGiven {
		t.Errorf("ratios from a workload that says its memory: %+v, want 20 MB per thousandth, kept", r)
	}
}

// frag-fit weighs a constrained shape by the GPUs it may use: a tenth of
// the workload constrained to the one small worker ("t4", 2 of the 18
// GPUs) weighs 0.1·18/2. Both policies keep an unconstrained executor off
// "t4" (a worker the constrained shape may not use counts all its free
// GPU as fragment for it, and the executor lessens that).
func TestFragFitWeighsConstrainedShapes(t *testing.T) {
	onT4 := func(id string) bool { return id == "t4" }
	one := placement.TaskShape{Cores: 4000, Resources: map[string]int{GPU: W}, Weight: 9}
	rare := one
	rare.Weight = 1
	shapes := []Shape{{TaskShape: one}, {TaskShape: rare, Constraint: "T4", Fits: onT4}}
	workers := []placement.Worker{
		{ID: "t4", CoresFree: 64000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W, W}}},
		{ID: "g2a", CoresFree: 64000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W, W, W, W, W, W, W, W}}},
		{ID: "g2b", CoresFree: 64000, MemoryFreeMB: 1 << 20, Resources: map[string][]int{GPU: {W, W, W, W, W, W, W, W}}},
	}
	any := placement.App{ID: "a", CoresLeft: 4000, CoresPerExecutor: 4000, ExecutorLimit: 1, ResourcesPerExecutor: map[string]int{GPU: W}}
	for name, want := range map[string]string{"frag-fit": "g2a", "fgd": "g2a"} {
		p, _ := placement.New(name, placement.Options{})
		p.(WorkloadSetter).SetWorkload(shapes)
		p.(WorkerMeeter).MeetWorkers(workers)
		if l, _ := placement.PlaceOne(any, workers, p); l.WorkerID != want {
			t.Errorf("%s put an unconstrained executor on %s, want %s", name, l.WorkerID, want)
		}
	}
	p, _ := placement.New("frag-fit", placement.Options{})
	p.(WorkloadSetter).SetWorkload(shapes)
	p.(WorkerMeeter).MeetWorkers(workers)
	placement.PlaceOne(any, workers, p)
	m := p.(*fragFit).frag
	if len(m.shapes) != 2 || m.shapes[0].group+m.shapes[1].group != 1 {
		t.Fatalf("shapes %+v, want one constrained", m.shapes)
	}
	for _, s := range m.shapes {
		want := 0.9
		if s.group == 1 {
			want = 0.1 * 18 / 2 // 18 GPUs in all, 2 it may use
		}
		if math.Abs(s.weight-want) > 1e-9 {
			t.Errorf("shape %+v weighs %v, want %v", s, s.weight, want)
		}
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

// fgdScore's table gives the simulator's int(100·sigmoid(−d/1000)).
func TestFGDScore(t *testing.T) {
	for d := -20000.0; d <= 20000; d += 0.37 {
		if got, want := fgdScore(-d), int64(100/(1+math.Exp(-d/1000))); got != want {
			t.Fatalf("fgdScore(%v) = %d, want %d", -d, got, want)
		}
		if got, want := fgdScore(d), int64(100/(1+math.Exp(d/1000))); got != want {
			t.Fatalf("fgdScore(%v) = %d, want %d", d, got, want)
		}
	}
	for k := 1; k <= 99; k++ {
		b := 1000 * math.Log(100/float64(k)-1) // the bound between scores k and k-1
		for _, d := range []float64{b, math.Nextafter(b, 0), math.Nextafter(b, math.Inf(1)), b - 1e-7, b + 1e-7, math.Floor(b), math.Ceil(b)} {
			if got, want := fgdScore(d), int64(100/(1+math.Exp(d/1000))); got != want {
				t.Fatalf("fgdScore(%v) = %d, want %d", d, got, want)
			}
		}
	}
}

// views gives fgdFragment's and strandFragment's figures to the last bit,
// on random workers, shapes and constraints (so that the measures can use
// it without changing a decision).
func TestViewsAreTheViews(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		m := fragMeasure{strand: strandRatios{cores: float64(r.IntN(20)) / W, mem: float64(r.IntN(60)) / W}}
		var shapes []shape
		for range 1 + r.IntN(40) {
			s := shape{cores: r.IntN(16) * 1000, weight: r.Float64(), group: r.IntN(3)}
			switch r.IntN(3) {
			case 1:
				s.milli, s.gpus = []int{110, 250, 460, 810}[r.IntN(4)], 1
			case 2:
				s.milli, s.gpus = W, []int{1, 2, 4, 8}[r.IntN(4)]
			}
			shapes = append(shapes, s)
		}
		m.setShapes(shapes, nil)
		free := make([]int, r.IntN(9))
		for g := range free {
			free[g] = []int{0, 90, 190, 540, W, W}[r.IntN(6)]
		}
		n := node{cores: r.IntN(64) * 1000, mem: r.IntN(512) * 1024, free: free, access: uint64(r.IntN(4))}
		got := views(&m, n, true)
		if want := fgdFragment(m.shapes, n); got.next != want {
			t.Fatalf("views next %v, fgdFragment %v", got.next, want)
		}
		if want := strandFragment(m.shapes, m.strand, n); got.strand != want {
			t.Fatalf("views strand %v, strandFragment %v", got.strand, want)
		}
	}
}

// Just below the table's end, d+scoreSpan rounds up to the table's length:
// fgdScore computes such a d rather than panic (a learnt workload's
// weights gave d = 4599.9999999999995 on 100,000 workers).
func TestFGDScoreAtTheTablesEnd(t *testing.T) {
	for _, d := range []float64{math.Nextafter(scoreSpan, 0), 4599.9999999999995, math.Nextafter(-scoreSpan, 0)} {
		if got, want := fgdScore(d), int64(100/(1+math.Exp(d/1000))); got != want {
			t.Fatalf("fgdScore(%v) = %d, want %d", d, got, want)
		}
	}
}

// Learning, a steady mix of apps keeps the measure once its kinds are
// seen (every worker's score with it), and a mix that really moves (a
// shape's share by more than learntDrift) changes it at the next doubling
// of the apps seen.
func TestLearningFollowsOnlyRealDrift(t *testing.T) {
	for _, name := range []string{"fgd", "frag-fit"} {
		p, _ := placement.New(name, placement.Options{MinCoreUnit: 1000})
		m := p.(interface{ measure() *fragMeasure }).measure()
		a := placement.App{ID: "a", CoresLeft: 4000, CoresPerExecutor: 4000, ExecutorLimit: 1, MemoryPerExecutorMB: 8192, ResourcesPerExecutor: map[string]int{GPU: 500}}
		b := placement.App{ID: "b", CoresLeft: 8000, CoresPerExecutor: 8000, ExecutorLimit: 1, MemoryPerExecutorMB: 16384, ResourcesPerExecutor: map[string]int{GPU: W}}
		for i := range 8 { // both kinds seen
			m.prepare([]placement.App{a, b}[i%2])
		}
		gen := m.gen
		for i := range 4000 { // the same mix: a little noise, no drift
			app := []placement.App{a, b}[i%2]
			if i%97 == 0 {
				app = a
			}
			m.prepare(app)
		}
		if m.gen != gen {
			t.Errorf("%s: a steady mix changed the measure %d times", name, m.gen-gen)
		}
		for range 8000 { // the mix moves: b alone
			m.prepare(b)
		}
		if m.gen == gen {
			t.Errorf("%s: the mix moved from half a to a sixth, and the measure stayed", name)
		}
		shares := map[kind]float64{}
		for _, s := range m.shapes {
			shares[s.kind()] = s.weight
		}
		// Learnt last at 8,016 apps seen (a doubling), a then a quarter.
		if got := shares[requestOf(a, a.CoresPerExecutor).kind()]; got < 0.2 || got > 0.3 {
			t.Errorf("%s: a's share learnt %.3f after the move, want about a quarter", name, got)
		}
	}
}
