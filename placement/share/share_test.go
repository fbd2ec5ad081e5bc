package share

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func nearVec(a, b Vec) bool {
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}

// The DRF paper's example (Ghodsi et al., §4.1): 9 CPUs and 18 GB; user A's
// tasks need <1 CPU, 4 GB>, B's <3 CPUs, 1 GB>. DRF gives A three tasks and
// B two, both at a dominant share of 2/3.
func TestDRFPapersExample(t *testing.T) {
	capacity := Vec{9, 18}
	got := FairShares(capacity, []Queue{
		{Weight: 1, Guarantee: Zero(2), Limit: Unbounded(2), Want: Vec{100, 400}},
		{Weight: 1, Guarantee: Zero(2), Limit: Unbounded(2), Want: Vec{300, 100}},
	})
	if !nearVec(got[0], Vec{3, 12}) || !nearVec(got[1], Vec{6, 2}) {
		t.Errorf("shares %v, want A <3, 12> and B <6, 2>", got)
	}
	for i, g := range got {
		if ds := DominantShare(g, capacity); !near(ds, 2.0/3) {
			t.Errorf("queue %d's dominant share %v, want 2/3", i, ds)
		}
	}
}

// Weights scale the dominant share: a queue of weight 2 gets twice the
// dominant share of one of weight 1 wanting the same.
func TestWeightsScaleTheDominantShare(t *testing.T) {
	capacity := Vec{12, 1200}
	got := FairShares(capacity, []Queue{
		{Weight: 2, Guarantee: Zero(2), Limit: Unbounded(2), Want: Vec{100, 100}},
		{Weight: 1, Guarantee: Zero(2), Limit: Unbounded(2), Want: Vec{100, 100}},
	})
	if !near(got[0][0], 8) || !near(got[1][0], 4) {
		t.Errorf("cores %v and %v, want 8 and 4", got[0][0], got[1][0])
	}
}

// Guarantees come first, as far as a queue wants them; a queue wanting
// little leaves the rest to the others (work-conserving); limits hold.
func TestGuaranteesLimitsAndIdleQueues(t *testing.T) {
	capacity := Vec{100, 100}
	got := FairShares(capacity, []Queue{
		{Weight: 1, Guarantee: Vec{60, 0}, Limit: Unbounded(2), Want: Vec{80, 0}},      // guaranteed 60
		{Weight: 1, Guarantee: Zero(2), Limit: Vec{15, math.Inf(1)}, Want: Vec{90, 0}}, // limited to 15
		{Weight: 1, Guarantee: Vec{30, 0}, Limit: Unbounded(2), Want: Vec{5, 0}},       // wants little
		{Weight: 1, Guarantee: Zero(2), Limit: Unbounded(2), Want: Vec{50, 0}},
	})
	// 60 + 5 guaranteed; the 35 left go to the queues below queue 0's
	// dominant share (0.6): queue 1 up to its limit, queue 3 the rest;
	// queue 0 is above them both and gets none.
	want := []float64{60, 15, 5, 20}
	for i := range want {
		if !near(got[i][0], want[i]) {
			t.Errorf("queue %d: %v cores, want %v (all: %v)", i, got[i][0], want[i], got)
		}
	}
}

// Guarantees that no longer fit (workers were lost) are scaled down
// together, and nothing is handed out beyond capacity.
func TestGuaranteesBeyondCapacityShrinkTogether(t *testing.T) {
	got := FairShares(Vec{30, 0}, []Queue{
		{Weight: 1, Guarantee: Vec{40, 0}, Limit: Unbounded(2), Want: Vec{40, 0}},
		{Weight: 1, Guarantee: Vec{20, 0}, Limit: Unbounded(2), Want: Vec{40, 0}},
	})
	if !near(got[0][0], 20) || !near(got[1][0], 10) {
		t.Errorf("shares %v, want 20 and 10", got)
	}
}

// A resource the cluster lacks stops only the queues that need it.
func TestAMissingResourceStopsOnlyItsQueues(t *testing.T) {
	got := FairShares(Vec{10, 100, 0}, []Queue{
		{Weight: 1, Guarantee: Zero(3), Limit: Unbounded(3), Want: Vec{10, 10, 2000}},
		{Weight: 1, Guarantee: Zero(3), Limit: Unbounded(3), Want: Vec{4, 10, 0}},
	})
	if !got[0].IsZero() || !nearVec(got[1], Vec{4, 10, 0}) {
		t.Errorf("shares %v, want none for the GPU queue and all it wants for the other", got)
	}
}

// On random instances: the shares fit the capacity, no queue gets more
// than it wants or than its limit, each gets its guarantee (as far as it
// wants it) when the guarantees fit, and a queue left short is short of a
// resource that ran out (work-conserving).
func TestFairSharesProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	for trial := range 2000 {
		n := 2 + rng.IntN(3)
		capacity := make(Vec, n)
		for r := range capacity {
			capacity[r] = float64(rng.IntN(200))
		}
		qs := make([]Queue, 1+rng.IntN(8))
		sumG := Zero(n)
		for i := range qs {
			q := Queue{Weight: 0.5 + rng.Float64()*3, Guarantee: Zero(n), Limit: Unbounded(n), Want: Zero(n)}
			for r := range n {
				q.Want[r] = float64(rng.IntN(150))
				if rng.IntN(3) == 0 {
					q.Guarantee[r] = float64(rng.IntN(60))
				}
				if rng.IntN(4) == 0 {
					q.Limit[r] = float64(rng.IntN(100))
				}
			}
			sumG = sumG.Add(q.Guarantee.Min(q.Want).Min(q.Limit))
			qs[i] = q
		}
		got := FairShares(capacity, qs)
		total := Zero(n)
		for i, g := range got {
			total = total.Add(g)
			if !g.Fits(qs[i].Want.Min(qs[i].Limit).Add(Vec(make([]float64, n)))) || !Zero(n).Fits(g) {
				t.Fatalf("trial %d: queue %d got %v, wants %v, limit %v", trial, i, g, qs[i].Want, qs[i].Limit)
			}
			if sumG.Fits(capacity) && !qs[i].Guarantee.Min(qs[i].Want).Min(qs[i].Limit).Fits(g.Add(Vec(tol(n)))) {
				t.Fatalf("trial %d: queue %d got %v below its guarantee %v", trial, i, g, qs[i].Guarantee)
			}
		}
		if !total.Fits(capacity.Add(Vec(tol(n)))) {
			t.Fatalf("trial %d: shares %v pass capacity %v", trial, total, capacity)
		}
		for i, g := range got {
			short := qs[i].Want.Min(qs[i].Limit).Sub(g)
			if short.IsZero() || needsAbsent(short, capacity) {
				continue
			}
			ranOut := false
			for r := range n {
				if short[r] > 1e-6 && capacity[r]-total[r] <= 1e-3*math.Max(1, capacity[r]) {
					ranOut = true
				}
			}
			if !ranOut {
				t.Fatalf("trial %d: queue %d is short %v while nothing it needs ran out (total %v of %v)", trial, i, short, total, capacity)
			}
		}
	}
}

func tol(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1e-6
	}
	return v
}
