package placement

import (
	"math"
	"testing"
)

// handState is a small hand-made cluster after a round:
//
//	w0: 16 cores, 3 free, 1000 MB free      w1: 16 cores, 6 free, 0 MB free
//	w2: dead
//
//	A  no CPE, max 20, 800 MB  execs w0:8 w1:4      (holds 12, wants 8 more)
//	B  CPE 2,  max 8, 1500 MB  execs w0:2 w0:2      (holds 4, wants 4 more)
//	C  no CPE, max 10, 2000 MB no execs             (wants 10)
//	D  no CPE, max 6, 100 MB   execs w0:1 w1:3      (holds 4, wants 2 more)
//	E  no CPE, max 3, 100 MB   execs w1:1 w1:2      (holds 3, done)
func handState() *state {
	w := func(id string, cores, free, memFree int, alive bool) simWorker {
		return simWorker{spec: WorkerSpec{ID: id, Cores: cores, MemoryMB: 1 << 20}, alive: alive, coresFree: free, memFree: memFree}
	}
	app := func(id string, maxCores, cpe, mem int, execs ...executor) simApp {
		a := simApp{spec: AppSpec{ID: id, MaxCores: maxCores, CoresPerExecutor: cpe, MemoryPerExecutorMB: mem}, present: true, execs: execs}
		for _, e := range execs {
			a.held += e.cores
		}
		return a
	}
	e := func(worker, cores int) executor { return executor{worker: worker, cores: cores} }
	return &state{
		workers: []simWorker{w("w0", 16, 3, 1000, true), w("w1", 16, 6, 0, true), w("w2", 16, 16, 1<<20, false)},
		apps: []simApp{
			app("A", 20, 0, 800, e(0, 8), e(1, 4)),
			app("B", 8, 2, 1500, e(0, 2), e(0, 2)),
			app("C", 10, 0, 2000),
			app("D", 6, 0, 100, e(0, 1), e(1, 3)),
			app("E", 3, 0, 100, e(1, 1), e(1, 2)),
		},
		queue: []int{0, 1, 2, 3, 4},
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestFewestExecutors(t *testing.T) {
	for _, c := range []struct{ cores, cpe, largest, want int }{
		{12, 0, 24, 1}, {24, 0, 24, 1}, {25, 0, 24, 2}, {256, 0, 64, 4}, {257, 0, 64, 5},
		{12, 4, 64, 3}, {2, 2, 64, 1}, {0, 0, 64, 1},
	} {
		if got := fewestExecutors(c.cores, c.cpe, c.largest); got != c.want {
			t.Errorf("fewestExecutors(%d, cpe %d, largest %d) = %d, want %d", c.cores, c.cpe, c.largest, got, c.want)
		}
	}
}

func TestStrandedCores(t *testing.T) {
	s := handState()
	// Unit 4: on w0 (3 free cores, 1000 MB) A and C need 4 cores, D needs
	// min(4, 2) = 2 cores and 100 MB: D fits, so w0 is usable. w1 has no
	// memory: its 6 cores are stranded. w2 is dead and does not count.
	if got, alive := strandedCores(s, 4); got != 6 || alive != 32 {
		t.Errorf("unit 4: stranded %d of %d, want 6 of 32", got, alive)
	}
	// Without D, nobody fits on w0 at unit 4 (B's 2 cores need 1500 MB).
	s.apps[3].present = false
	s.queue = []int{0, 1, 2, 4}
	if got, _ := strandedCores(s, 4); got != 9 {
		t.Errorf("unit 4 without D: stranded %d, want 9", got)
	}
	// At unit 1, A can start a 1-core, 800 MB executor on w0.
	if got, _ := strandedCores(s, 1); got != 6 {
		t.Errorf("unit 1 without D: stranded %d, want 6", got)
	}
	// Nobody waits: idle cores are not stranded.
	s.queue = []int{4}
	if got, _ := strandedCores(s, 4); got != 0 {
		t.Errorf("no waiting app: stranded %d, want 0", got)
	}
}

func TestBlastRadius(t *testing.T) {
	s := handState()
	scratch := make([]int, len(s.workers))
	for i, want := range []float64{8.0 / 12, 1, 0, 3.0 / 4, 1} {
		if got := blastRadius(&s.apps[i], scratch); !near(got, want) {
			t.Errorf("%s: blast %v, want %v", s.apps[i].spec.ID, got, want)
		}
	}
	for i, v := range scratch {
		if v != 0 {
			t.Fatalf("scratch[%d] = %d, not cleared", i, v)
		}
	}
}

func TestSampleHandState(t *testing.T) {
	s := handState()
	rs := sample(s, 16, 4, 4, make([]int, len(s.workers)))
	if rs.running != 4 {
		t.Errorf("running = %d, want 4 (C holds nothing)", rs.running)
	}
	// A: 2 executors for 12 cores, fewest ceil(12/16) = 1 -> 2. B: 2 of
	// 4/2 = 2 -> 1. D: 2 for 4 cores -> 2. E: 2 for 3 cores -> 2.
	if !near(rs.ratioSum, 7) {
		t.Errorf("ratio sum = %v, want 7", rs.ratioSum)
	}
	// Blast only for apps holding 2*4 = 8 cores or more: A alone.
	if len(rs.blast) != 1 || !near(rs.blast[0], 8.0/12) {
		t.Errorf("blast samples = %v, want [0.667]", rs.blast)
	}
	// Judged (no CPE, max >= 4): A's 8 and 4, D's 1 and 3 -> 2 of 4 small.
	// E (max 3) is not judged; B fixed its size.
	if rs.small != 2 || rs.judged != 4 {
		t.Errorf("small %d of %d, want 2 of 4", rs.small, rs.judged)
	}
	// Sizes of executors without CPE: 8, 4, 1, 3, 1, 2.
	if want := [len(sizeBuckets)]int{2, 2, 1, 1, 0, 0}; rs.sizes != want {
		t.Errorf("sizes = %v, want %v", rs.sizes, want)
	}
	// Waiting: A 8, B 4, C 10, D 2.
	if rs.waiting != 24 || rs.held != 23 || rs.exe != 8 {
		t.Errorf("waiting %d held %d executors %d, want 24, 23, 8", rs.waiting, rs.held, rs.exe)
	}
	if rs.stranded != 6 || rs.alive != 32 {
		t.Errorf("stranded %d of %d, want 6 of 32", rs.stranded, rs.alive)
	}
}

func TestAccumulatorAverages(t *testing.T) {
	acc := newAccumulator(16, 4, 4)
	acc.addSample(roundSample{running: 2, ratioSum: 3, blast: []float64{0.5, 1}, small: 1, judged: 4,
		sizes: [len(sizeBuckets)]int{1, 0, 3}, stranded: 8, alive: 32, waiting: 10, held: 16, exe: 4})
	acc.addSample(roundSample{running: 1, ratioSum: 1, blast: []float64{0.25}, small: 0, judged: 4,
		sizes: [len(sizeBuckets)]int{0, 0, 4}, stranded: 0, alive: 16, waiting: 0, held: 8, exe: 4})
	acc.addSample(roundSample{alive: 16}) // nothing running: counts for the per-round means only
	m := acc.result()
	checks := []struct {
		name      string
		got, want float64
	}{
		{"ExecRatio", m.ExecRatio, (1.5 + 1) / 2},
		{"BlastMean", m.BlastMean, (0.75 + 0.25) / 2},
		{"BlastP95", m.BlastP95, 1},
		{"SmallShare", m.SmallShare, 1.0 / 8},
		{"StrandedCores", m.StrandedCores, 8.0 / 3},
		{"StrandedPct", m.StrandedPct, 25.0 / 3},
		{"WaitingCores", m.WaitingCores, 10.0 / 3},
		{"UtilPct", m.UtilPct, (50 + 50 + 0) / 3.0},
		{"Executors", m.Executors, 8.0 / 3},
		{"SizeShare[0]", m.SizeShare[0], 1.0 / 8},
		{"SizeShare[2]", m.SizeShare[2], 7.0 / 8},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if m.Rounds != 3 {
		t.Errorf("Rounds = %d, want 3", m.Rounds)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{95, 10}, {50, 5}, {10, 1}, {99, 10}} {
		if got := percentile(append([]float64(nil), xs...), c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 95); got != 0 {
		t.Errorf("p95 of nothing = %v, want 0", got)
	}
}

func TestBucketOf(t *testing.T) {
	for cores, want := range map[int]int{1: 0, 2: 1, 3: 1, 4: 2, 7: 2, 8: 3, 15: 3, 16: 4, 31: 4, 32: 5, 64: 5} {
		if got := bucketOf(cores); got != want {
			t.Errorf("bucketOf(%d) = %d, want %d", cores, got, want)
		}
	}
}
