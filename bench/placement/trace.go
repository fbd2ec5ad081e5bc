package placement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// A Trace is a cluster history that does not depend on the placement policy:
// which workers exist, which apps arrive, and what happens in every round.
// The simulator replays the same trace once per policy.
type Trace struct {
	Name        string
	Description string
	Workers     []WorkerSpec
	Apps        []AppSpec
	Rounds      []Round
}

// WorkerSpec is one worker. Cores and MemoryMB are what it offers berth when it
// (re)joins empty; TotalCores is its size as printed (it may run other things).
type WorkerSpec struct {
	ID         string
	Cores      int
	MemoryMB   int
	TotalCores int
}

// AppSpec is one application.
type AppSpec struct {
	ID                  string
	MaxCores            int // total cores the app asks for (finite)
	CoresPerExecutor    int // 0: the app did not fix the executor size
	MemoryPerExecutorMB int
}

// Round lists what happens at the start of one scheduling round, applied in
// this order: master loss, worker failures, worker (re)joins, app finishes,
// app arrivals. Then the policy places the waiting demand.
type Round struct {
	Label      string // when set, the placement after this round is reported
	MasterLoss bool   // every executor is dropped; all demand is re-placed
	Fail       []int  // workers that fail (their executors are lost)
	Join       []int  // workers that join, or come back empty
	Finish     []int  // apps that finish (their executors are released)
	Arrive     []int  // apps that arrive (queued FIFO)
}

const gb = 1024

// SeedTrace is the cluster from the seed issue: two workers (32 and 40
// cores) with 24 cores and 10 GB free each, one app of 12 cores with 10 GB
// executors and no CoresPerExecutor; then a worker loss, the worker's return,
// and a master loss after which every executor is placed again.
func SeedTrace() *Trace {
	return &Trace{
		Name: "seed",
		Description: "seed cluster: w1 (32 cores) and w2 (40 cores), 24 cores and 10 GB free on each; " +
			"app-1 wants 12 cores in 10 GB executors (no CoresPerExecutor); " +
			"round 2 loses w1, round 3 brings it back empty, round 4 loses the master",
		Workers: []WorkerSpec{
			{ID: "w1", Cores: 24, MemoryMB: 10 * gb, TotalCores: 32},
			{ID: "w2", Cores: 24, MemoryMB: 10 * gb, TotalCores: 40},
		},
		Apps: []AppSpec{{ID: "app-1", MaxCores: 12, MemoryPerExecutorMB: 10 * gb}},
		Rounds: []Round{
			{Label: "initial placement", Join: []int{0, 1}, Arrive: []int{0}},
			{Label: "after worker loss (w1)", Fail: []int{0}},
			{Label: "after w1 returns empty", Join: []int{0}},
			{Label: "after master loss", MasterLoss: true},
		},
	}
}

// StormConfig parameterises the synthetic storm trace.
type StormConfig struct {
	Workers         int
	WorkerCores     int
	WorkerMemoryMB  int
	Rounds          int
	Apps            int
	Seed            uint64
	StormEvery      int     // rounds between storms; 0 disables them
	StormFraction   float64 // share of all workers that fail in one storm
	StormDowntime   int     // mean rounds a failed worker stays down
	MasterLossEvery int     // rounds between master losses; 0 disables them
	MinLifetime     int     // an app runs [MinLifetime, MaxLifetime] rounds after it arrives
	MaxLifetime     int
}

// DefaultStorm is the default synthetic trace.
func DefaultStorm() StormConfig {
	return StormConfig{
		Workers:        200,
		WorkerCores:    64,
		WorkerMemoryMB: 256 * gb,
		Rounds:         300,
		Apps:           600,
		Seed:           1,
		StormEvery:     30,
		StormFraction:  0.10,
		StormDowntime:  10,
		MinLifetime:    40,
		MaxLifetime:    200,
	}
}

// Validate reports a configuration the generator cannot use.
func (c StormConfig) Validate() error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("--workers must be at least 1, got %d", c.Workers)
	case c.WorkerCores < 1 || c.WorkerMemoryMB < 1:
		return fmt.Errorf("workers need cores and memory, got %d cores and %d MB", c.WorkerCores, c.WorkerMemoryMB)
	case c.Rounds < 1:
		return fmt.Errorf("--rounds must be at least 1, got %d", c.Rounds)
	case c.Apps < 0:
		return fmt.Errorf("--apps must not be negative, got %d", c.Apps)
	case c.StormEvery < 0:
		return fmt.Errorf("--storm-every must not be negative, got %d", c.StormEvery)
	case c.StormFraction < 0 || c.StormFraction > 1 || math.IsNaN(c.StormFraction):
		return fmt.Errorf("--storm-fraction must be in [0, 1], got %v", c.StormFraction)
	case c.StormDowntime < 1:
		return fmt.Errorf("--storm-downtime must be at least 1, got %d", c.StormDowntime)
	case c.MasterLossEvery < 0:
		return fmt.Errorf("--master-loss-every must not be negative, got %d", c.MasterLossEvery)
	case c.MinLifetime < 1 || c.MaxLifetime < c.MinLifetime:
		return fmt.Errorf("app lifetime range [%d, %d] is empty", c.MinLifetime, c.MaxLifetime)
	}
	return nil
}

// appSizes is the size mix of the storm trace: total cores and their weight.
// Each drawn size is then jittered by ±25% so that sizes are not all powers
// of two.
var appSizes = []struct{ cores, weight int }{
	{2, 2}, {4, 2}, {8, 2}, {16, 3}, {32, 3}, {64, 3}, {128, 3}, {256, 2},
}

// StormTrace generates the synthetic trace: all workers join in round 0; apps
// arrive at uniformly random rounds (a tenth of them at round 0) and finish
// a random lifetime later; every StormEvery rounds StormFraction of the
// workers fail at once (alive ones, chosen at random) and each comes back
// empty after StormDowntime/2 to 3*StormDowntime/2 rounds. Half the apps fix
// CoresPerExecutor at 2, 4 or 8 cores; the other half do not.
func StormTrace(c StormConfig) (*Trace, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	tr := &Trace{Name: "storm", Rounds: make([]Round, c.Rounds)}

	width := len(fmt.Sprint(c.Workers))
	for i := range c.Workers {
		tr.Workers = append(tr.Workers, WorkerSpec{
			ID:         fmt.Sprintf("w%0*d", width, i+1),
			Cores:      c.WorkerCores,
			MemoryMB:   c.WorkerMemoryMB,
			TotalCores: c.WorkerCores,
		})
		tr.Rounds[0].Join = append(tr.Rounds[0].Join, i)
	}

	totalWeight := 0
	for _, s := range appSizes {
		totalWeight += s.weight
	}
	type arrival struct{ round, app int }
	arrivals := make([]arrival, 0, c.Apps)
	appWidth := len(fmt.Sprint(c.Apps))
	for a := range c.Apps {
		pick := rng.IntN(totalWeight)
		size := appSizes[0].cores
		for _, s := range appSizes {
			if pick < s.weight {
				size = s.cores
				break
			}
			pick -= s.weight
		}
		size = max(2, min(256, int(math.Round(float64(size)*(0.75+0.5*rng.Float64())))))
		spec := AppSpec{ID: fmt.Sprintf("app-%0*d", appWidth, a+1), MaxCores: size}
		if a%2 == 0 { // half the apps fix the executor size
			cpe := []int{2, 4, 8}[rng.IntN(3)]
			cpe = min(cpe, size)
			spec.CoresPerExecutor = cpe
			spec.MaxCores = max(cpe, size/cpe*cpe)
			spec.MemoryPerExecutorMB = cpe * []int{2, 3, 4, 6}[rng.IntN(4)] * gb
		} else {
			spec.MemoryPerExecutorMB = []int{4, 8, 16, 24}[rng.IntN(4)] * gb
		}
		tr.Apps = append(tr.Apps, spec)
		round := 0
		if rng.IntN(10) != 0 {
			round = rng.IntN(c.Rounds)
		}
		arrivals = append(arrivals, arrival{round, a})
		life := c.MinLifetime + rng.IntN(c.MaxLifetime-c.MinLifetime+1)
		if end := round + life; end < c.Rounds {
			tr.Rounds[end].Finish = append(tr.Rounds[end].Finish, a)
		}
	}
	// FIFO: by arrival round, then by app number.
	sort.SliceStable(arrivals, func(i, j int) bool { return arrivals[i].round < arrivals[j].round })
	for _, ar := range arrivals {
		tr.Rounds[ar.round].Arrive = append(tr.Rounds[ar.round].Arrive, ar.app)
	}

	// Storms. downUntil[w] is the round worker w comes back (0: it is up).
	downUntil := make([]int, c.Workers)
	storms := 0
	for r := 1; r < c.Rounds; r++ {
		for w := range downUntil {
			if downUntil[w] == r {
				tr.Rounds[r].Join = append(tr.Rounds[r].Join, w)
				downUntil[w] = 0
			}
		}
		if c.MasterLossEvery > 0 && r%c.MasterLossEvery == 0 {
			tr.Rounds[r].MasterLoss = true
		}
		if c.StormEvery == 0 || r%c.StormEvery != 0 {
			continue
		}
		var alive []int
		for w := range downUntil {
			if downUntil[w] == 0 && !contains(tr.Rounds[r].Join, w) {
				alive = append(alive, w)
			}
		}
		n := min(len(alive), int(math.Round(c.StormFraction*float64(c.Workers))))
		if n == 0 {
			continue
		}
		storms++
		rng.Shuffle(len(alive), func(i, j int) { alive[i], alive[j] = alive[j], alive[i] })
		failed := alive[:n]
		sort.Ints(failed)
		for _, w := range failed {
			down := max(1, c.StormDowntime/2+rng.IntN(c.StormDowntime+1))
			if r+down < c.Rounds {
				downUntil[w] = r + down
			} else {
				downUntil[w] = -1 // stays down until the end
			}
		}
		tr.Rounds[r].Fail = append(tr.Rounds[r].Fail, failed...)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "storm cluster: %d workers x %d cores / %d GB, %d apps (2-256 cores, half with CoresPerExecutor 2/4/8) over %d rounds, lifetime %d-%d rounds",
		c.Workers, c.WorkerCores, c.WorkerMemoryMB/gb, c.Apps, c.Rounds, c.MinLifetime, c.MaxLifetime)
	if storms > 0 {
		fmt.Fprintf(&b, "; %d storms (every %d rounds, %.0f%% of workers, back after ~%d rounds)",
			storms, c.StormEvery, 100*c.StormFraction, c.StormDowntime)
	}
	if c.MasterLossEvery > 0 {
		fmt.Fprintf(&b, "; master loss every %d rounds", c.MasterLossEvery)
	}
	fmt.Fprintf(&b, "; seed %d", c.Seed)
	tr.Description = b.String()
	return tr, nil
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// largestWorker is the most cores one worker of the trace offers: no
// executor can be larger, so it sets the fewest executors an app can have.
func (t *Trace) largestWorker() int {
	largest := 1
	for _, w := range t.Workers {
		largest = max(largest, w.Cores)
	}
	return largest
}
