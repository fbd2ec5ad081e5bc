package placement

import (
	"math"
	"sort"
	"time"
)

// Metrics are the deterministic figures of one replay. Every per-round value
// is sampled after the round's placement.
type Metrics struct {
	Rounds int

	// ExecRatio: for each running app (one executor or more), executors held
	// divided by the fewest executors that could hold its cores (cores/CPE
	// with CoresPerExecutor, else ceil(cores / largest worker)); the mean
	// over apps, averaged over rounds with a running app. 1 is ideal.
	ExecRatio float64

	// SmallShare: among executor-rounds of apps without CoresPerExecutor
	// whose MaxCores is at least the reference unit, the share with fewer
	// cores than the reference unit.
	SmallShare float64

	// StrandedCores: free cores on alive workers on which no waiting app
	// could start an executor (fewer free cores than its smallest executor,
	// CoresPerExecutor or min(policy unit, cores left), or too little
	// memory), averaged over rounds; 0 in a round with no waiting app (idle
	// cores are not stranded). StrandedPct is the same as a share of the
	// alive cores.
	StrandedCores, StrandedPct float64

	// BlastMean: for each running app holding at least twice the reference
	// unit, the largest share of its cores on one worker; the mean over apps,
	// averaged over rounds. BlastP95: the 95th percentile of all (round, app)
	// samples. Smaller apps are left out: one executor is the right answer
	// for them under every policy, and they would pin the p95 at 1.
	BlastMean, BlastP95 float64

	// WaitingCores: cores asked for but not held, summed over present apps,
	// averaged over rounds.
	WaitingCores float64

	// UtilPct: cores held by executors as a share of alive cores, averaged
	// over rounds.
	UtilPct float64

	// Executors: executors alive, averaged over rounds.
	Executors float64

	// SizeShare: share of executor-rounds of apps without CoresPerExecutor in
	// each bucket of sizeBuckets.
	SizeShare [len(sizeBuckets)]float64
}

// sizeBuckets are the executor size classes of the chart and the CSV.
var sizeBuckets = [...]struct {
	Label, Key string // for the chart, for the CSV header
	Min, Max   int    // cores, inclusive
}{
	{"1", "size_1", 1, 1}, {"2-3", "size_2_3", 2, 3}, {"4-7", "size_4_7", 4, 7},
	{"8-15", "size_8_15", 8, 15}, {"16-31", "size_16_31", 16, 31}, {"32+", "size_32_plus", 32, math.MaxInt},
}

func bucketOf(cores int) int {
	for i, b := range sizeBuckets {
		if cores >= b.Min && cores <= b.Max {
			return i
		}
	}
	return 0
}

// fewestExecutors is the fewest executors that can hold cores: cores/cpe for
// a fixed executor size, else one executor per largest worker. At least 1.
func fewestExecutors(cores, cpe, largestWorker int) int {
	if cores <= 0 {
		return 1
	}
	if cpe > 0 {
		return max(1, cores/cpe)
	}
	return max(1, (cores+largestWorker-1)/largestWorker)
}

// blastRadius is the largest share of the app's cores on one worker; scratch
// must have one zeroed entry per worker and is left zeroed.
func blastRadius(app *simApp, scratch []int) float64 {
	if app.held <= 0 {
		return 0
	}
	largest := 0
	for _, e := range app.execs {
		scratch[e.worker] += e.cores
		largest = max(largest, scratch[e.worker])
	}
	for _, e := range app.execs {
		scratch[e.worker] = 0
	}
	return float64(largest) / float64(app.held)
}

// strandedCores is the free cores of alive workers on which no waiting app
// can start an executor under the given unit, and the alive cores.
func strandedCores(s *state, unit int) (stranded, alive int) {
	type need struct{ cores, mem int }
	var needs []need
	for _, a := range s.queue {
		app := &s.apps[a]
		left := app.coresLeft()
		if left <= 0 {
			continue
		}
		n := need{cores: min(unit, left), mem: app.spec.MemoryPerExecutorMB}
		if cpe := app.spec.CoresPerExecutor; cpe > 0 {
			n.cores = cpe
		}
		needs = append(needs, n)
	}
	for _, w := range s.workers {
		if !w.alive {
			continue
		}
		alive += w.spec.Cores
		if w.coresFree <= 0 || len(needs) == 0 {
			continue
		}
		usable := false
		for _, n := range needs {
			if w.coresFree >= n.cores && w.memFree >= n.mem {
				usable = true
				break
			}
		}
		if !usable {
			stranded += w.coresFree
		}
	}
	return stranded, alive
}

// roundSample is what one round contributes.
type roundSample struct {
	running            int     // apps holding an executor
	ratioSum           float64 // sum over running apps of executors/fewest
	blast              []float64
	small, judged      int // executors below the reference unit, among those judged
	sizes              [len(sizeBuckets)]int
	stranded, alive    int
	waiting, held, exe int
}

// sample measures the state after a round.
func sample(s *state, largestWorker, unit, refUnit int, scratch []int) roundSample {
	var rs roundSample
	for _, a := range s.queue {
		app := &s.apps[a]
		rs.waiting += max(app.coresLeft(), 0)
		rs.held += app.held
		rs.exe += len(app.execs)
		if len(app.execs) == 0 {
			continue
		}
		rs.running++
		rs.ratioSum += float64(len(app.execs)) / float64(fewestExecutors(app.held, app.spec.CoresPerExecutor, largestWorker))
		if app.held >= 2*refUnit {
			rs.blast = append(rs.blast, blastRadius(app, scratch))
		}
		if app.spec.CoresPerExecutor > 0 {
			continue
		}
		judged := app.spec.MaxCores >= refUnit
		for _, e := range app.execs {
			rs.sizes[bucketOf(e.cores)]++
			if judged {
				rs.judged++
				if e.cores < refUnit {
					rs.small++
				}
			}
		}
	}
	rs.stranded, rs.alive = strandedCores(s, unit)
	return rs
}

// accumulator sums samples over the rounds of one replay.
type accumulator struct {
	largestWorker, unit, refUnit int
	scratch                      []int

	rounds, runningRounds, blastRounds   int
	ratio, blastMean                     float64
	blast                                []float64
	small, judged                        int
	sizes                                [len(sizeBuckets)]int
	stranded, strandedPct, waiting, util float64
	executors                            float64
}

func newAccumulator(largestWorker, unit, refUnit int) *accumulator {
	return &accumulator{largestWorker: largestWorker, unit: unit, refUnit: refUnit}
}

func (a *accumulator) add(s *state) {
	if len(a.scratch) < len(s.workers) {
		a.scratch = make([]int, len(s.workers))
	}
	rs := sample(s, a.largestWorker, a.unit, a.refUnit, a.scratch)
	a.addSample(rs)
}

func (a *accumulator) addSample(rs roundSample) {
	a.rounds++
	if rs.running > 0 {
		a.runningRounds++
		a.ratio += rs.ratioSum / float64(rs.running)
	}
	if len(rs.blast) > 0 {
		a.blastRounds++
		a.blastMean += mean(rs.blast)
		a.blast = append(a.blast, rs.blast...)
	}
	a.small += rs.small
	a.judged += rs.judged
	for i, n := range rs.sizes {
		a.sizes[i] += n
	}
	a.stranded += float64(rs.stranded)
	if rs.alive > 0 {
		a.strandedPct += 100 * float64(rs.stranded) / float64(rs.alive)
		a.util += 100 * float64(rs.held) / float64(rs.alive)
	}
	a.waiting += float64(rs.waiting)
	a.executors += float64(rs.exe)
}

func (a *accumulator) result() Metrics {
	m := Metrics{Rounds: a.rounds}
	if a.runningRounds > 0 {
		m.ExecRatio = a.ratio / float64(a.runningRounds)
	}
	if a.blastRounds > 0 {
		m.BlastMean = a.blastMean / float64(a.blastRounds)
		m.BlastP95 = percentile(a.blast, 95)
	}
	if a.judged > 0 {
		m.SmallShare = float64(a.small) / float64(a.judged)
	}
	if a.rounds > 0 {
		n := float64(a.rounds)
		m.StrandedCores, m.StrandedPct = a.stranded/n, a.strandedPct/n
		m.WaitingCores, m.UtilPct, m.Executors = a.waiting/n, a.util/n, a.executors/n
	}
	total := 0
	for _, n := range a.sizes {
		total += n
	}
	if total > 0 {
		for i, n := range a.sizes {
			m.SizeShare[i] = float64(n) / float64(total)
		}
	}
	return m
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// percentile is the nearest-rank p-th percentile of xs (sorted in place).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	rank := int(math.Ceil(p / 100 * float64(len(xs))))
	return xs[min(max(rank, 1), len(xs))-1]
}

// Timing is the wall time of the StartExecutorsOnWorkers calls, one per round.
type Timing struct {
	MeanUS, P99US float64
}

func timingOf(ds []time.Duration) Timing {
	us := make([]float64, len(ds))
	for i, d := range ds {
		us[i] = float64(d.Nanoseconds()) / 1e3
	}
	return Timing{MeanUS: mean(us), P99US: percentile(us, 99)}
}
