package placement

import (
	"fmt"
	"reflect"
	"testing"
)

// smallStorm is a storm trace small enough for the race detector.
func smallStorm(seed uint64) StormConfig {
	c := DefaultStorm()
	c.Workers, c.Rounds, c.Apps, c.Seed = 40, 90, 150, seed
	c.StormEvery, c.MinLifetime, c.MaxLifetime = 15, 10, 60
	c.MasterLossEvery = 40
	return c
}

func allConfigs(t *testing.T) []RunConfig {
	t.Helper()
	rcs, err := runConfigs("spread,pack,bestfit", "1,2,4,8", 4)
	if err != nil {
		t.Fatal(err)
	}
	return rcs
}

func mustStorm(t *testing.T, c StormConfig) *Trace {
	t.Helper()
	tr, err := StormTrace(c)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// phases flattens a result's snapshots of app-1 to one string per phase.
func phases(t *testing.T, res *Result) []string {
	t.Helper()
	var out []string
	for _, s := range res.Snapshots {
		if len(s.Apps) != 1 {
			t.Fatalf("%s %q: %d apps, want 1", res.Name, s.Label, len(s.Apps))
		}
		a := s.Apps[0]
		out = append(out, fmt.Sprintf("%s %d/%d", a.Executors, a.Held, a.Wanted))
	}
	return out
}

func TestSeedTraceExecutors(t *testing.T) {
	want := map[string][]string{
		// Spark's answer: one core at a time over both workers, 6 and 6. When
		// w1 dies the app keeps 6 cores and cannot get the rest back: w2 has
		// 18 free cores but no memory left. w1's return gives them back.
		"spread-u1": {"w1:6 w2:6 12/12", "w2:6 6/12", "w2:6 w1:6 12/12", "w1:6 w2:6 12/12"},
		// Four cores at a time: 4, 4, 4 gives w1 eight and w2 four.
		"spread-u4": {"w1:8 w2:4 12/12", "w2:4 4/12", "w2:4 w1:8 12/12", "w1:8 w2:4 12/12"},
		// Pack puts everything on w1, loses it all with w1, and moves it to w2.
		"pack-u1": {"w1:12 12/12", "w2:12 12/12", "w2:12 12/12", "w1:12 12/12"},
		// Best fit halves each round's grant: when w1 comes back it gets 4 of
		// the 6 missing cores in one round, and then has no memory left.
		"bestfit-u4": {"w1:6 w2:6 12/12", "w2:6 6/12", "w2:6 w1:6 12/12", "w1:6 w2:6 12/12"},
	}
	tr := SeedTrace()
	for _, rc := range []RunConfig{
		{Policy: "spread", Unit: 1, RefUnit: 4}, {Policy: "spread", Unit: 4, RefUnit: 4},
		{Policy: "pack", Unit: 1, RefUnit: 4}, {Policy: "bestfit", Unit: 4, RefUnit: 4},
	} {
		res, err := Run(tr, rc)
		if err != nil {
			t.Fatal(err)
		}
		if got := phases(t, res); !reflect.DeepEqual(got, want[rc.Name()]) {
			t.Errorf("%s:\n got  %q\n want %q", rc.Name(), got, want[rc.Name()])
		}
	}
}

func TestSeedTraceLostExecutors(t *testing.T) {
	res, err := Run(SeedTrace(), RunConfig{Policy: "spread", Unit: 1, RefUnit: 4})
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for _, s := range res.Snapshots {
		lost = append(lost, s.Apps[0].Lost)
	}
	if want := []string{"", "w1:6", "", "w2:6 w1:6"}; !reflect.DeepEqual(lost, want) {
		t.Errorf("lost per phase = %q, want %q", lost, want)
	}
}

func TestSeedTraceMetrics(t *testing.T) {
	res, err := Run(SeedTrace(), RunConfig{Policy: "spread", Unit: 1, RefUnit: 4})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	// Rounds: 2 executors, 1 (w1 lost), 2, 2; the fewest for 12 or 6 cores
	// on a 24-core worker is 1.
	if m.ExecRatio != 1.75 {
		t.Errorf("ExecRatio = %v, want 1.75", m.ExecRatio)
	}
	// Only round 2 strands cores: w2 has 18 free cores and no memory while
	// the app waits for 6. 18/4 rounds; 18 of 24 alive cores = 75%, /4.
	if m.StrandedCores != 4.5 || m.StrandedPct != 18.75 {
		t.Errorf("stranded = %v cores, %v%%; want 4.5, 18.75", m.StrandedCores, m.StrandedPct)
	}
	if m.WaitingCores != 1.5 {
		t.Errorf("WaitingCores = %v, want 1.5", m.WaitingCores)
	}
	// Blast: half the app on each worker, except in round 2, when it holds 6
	// cores (fewer than twice the reference unit) and is not counted.
	if m.BlastMean != 0.5 || m.BlastP95 != 0.5 {
		t.Errorf("blast = %v, p95 %v; want 0.5, 0.5", m.BlastMean, m.BlastP95)
	}
	if m.SmallShare != 0 {
		t.Errorf("SmallShare = %v, want 0", m.SmallShare)
	}
}

func metricsOf(t *testing.T, tr *Trace, rcs []RunConfig) map[string]Metrics {
	t.Helper()
	results, err := runAll(tr, rcs)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]Metrics, len(results))
	for _, r := range results {
		out[r.Name] = r.Metrics
	}
	return out
}

func TestSameSeedSameMetrics(t *testing.T) {
	rcs := allConfigs(t)
	a := metricsOf(t, mustStorm(t, smallStorm(7)), rcs)
	b := metricsOf(t, mustStorm(t, smallStorm(7)), rcs)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different metrics:\n%+v\n%+v", a, b)
	}
}

func TestDifferentSeedsDiffer(t *testing.T) {
	rcs := []RunConfig{{Policy: "spread", Unit: 1, RefUnit: 4}, {Policy: "bestfit", Unit: 4, RefUnit: 4}}
	a := metricsOf(t, mustStorm(t, smallStorm(1)), rcs)
	b := metricsOf(t, mustStorm(t, smallStorm(2)), rcs)
	for _, rc := range rcs {
		if reflect.DeepEqual(a[rc.Name()], b[rc.Name()]) {
			t.Errorf("%s: seeds 1 and 2 give identical metrics %+v", rc.Name(), a[rc.Name()])
		}
	}
	ta, tb := mustStorm(t, smallStorm(1)), mustStorm(t, smallStorm(2))
	if reflect.DeepEqual(ta.Apps, tb.Apps) {
		t.Error("seeds 1 and 2 give the same apps")
	}
}

// checkState recomputes every worker's use from the executors and fails on
// any over-commit or bookkeeping drift.
func checkState(t *testing.T, name string, round int, s *state) {
	t.Helper()
	usedCores := make([]int, len(s.workers))
	usedMem := make([]int, len(s.workers))
	for _, a := range s.queue {
		app := &s.apps[a]
		held := 0
		for _, e := range app.execs {
			w := &s.workers[e.worker]
			if !w.alive {
				t.Fatalf("%s round %d: %s has an executor on dead worker %s", name, round, app.spec.ID, w.spec.ID)
			}
			if cpe := app.spec.CoresPerExecutor; cpe > 0 && e.cores != cpe {
				t.Fatalf("%s round %d: %s executor of %d cores, CoresPerExecutor %d", name, round, app.spec.ID, e.cores, cpe)
			}
			if e.mem != app.spec.MemoryPerExecutorMB {
				t.Fatalf("%s round %d: %s executor with %d MB, want %d", name, round, app.spec.ID, e.mem, app.spec.MemoryPerExecutorMB)
			}
			usedCores[e.worker] += e.cores
			usedMem[e.worker] += e.mem
			held += e.cores
		}
		if held != app.held || held > app.spec.MaxCores {
			t.Fatalf("%s round %d: %s holds %d cores (recorded %d, max %d)", name, round, app.spec.ID, held, app.held, app.spec.MaxCores)
		}
	}
	for i, w := range s.workers {
		if !w.alive {
			continue
		}
		if usedCores[i] > w.spec.Cores || usedMem[i] > w.spec.MemoryMB {
			t.Fatalf("%s round %d: %s over-committed: %d/%d cores, %d/%d MB", name, round, w.spec.ID,
				usedCores[i], w.spec.Cores, usedMem[i], w.spec.MemoryMB)
		}
		if w.coresFree != w.spec.Cores-usedCores[i] || w.memFree != w.spec.MemoryMB-usedMem[i] {
			t.Fatalf("%s round %d: %s free %d cores/%d MB, executors leave %d/%d", name, round, w.spec.ID,
				w.coresFree, w.memFree, w.spec.Cores-usedCores[i], w.spec.MemoryMB-usedMem[i])
		}
	}
}

func TestReplayNeverOverCommits(t *testing.T) {
	traces := []*Trace{SeedTrace(), mustStorm(t, smallStorm(3))}
	// A tight cluster where memory, not cores, runs out first.
	tight := smallStorm(4)
	tight.Workers, tight.WorkerMemoryMB, tight.StormFraction = 12, 48*gb, 0.25
	traces = append(traces, mustStorm(t, tight))
	for _, tr := range traces {
		for _, rc := range allConfigs(t) {
			rounds := 0
			rc.AfterRound = func(round int, s *state) {
				rounds++
				checkState(t, tr.Name+"/"+rc.Name(), round, s)
			}
			if _, err := Run(tr, rc); err != nil {
				t.Fatalf("%s/%s: %v", tr.Name, rc.Name(), err)
			}
			if rounds != len(tr.Rounds) {
				t.Fatalf("%s/%s: AfterRound ran %d times, want %d", tr.Name, rc.Name(), rounds, len(tr.Rounds))
			}
		}
	}
}

func TestStormTraceShape(t *testing.T) {
	c := smallStorm(5)
	tr := mustStorm(t, c)
	if len(tr.Workers) != c.Workers || len(tr.Apps) != c.Apps || len(tr.Rounds) != c.Rounds {
		t.Fatalf("trace has %d workers, %d apps, %d rounds", len(tr.Workers), len(tr.Apps), len(tr.Rounds))
	}
	fixed := 0
	for _, a := range tr.Apps {
		if a.MaxCores < 2 || a.MaxCores > 256 {
			t.Errorf("%s: %d cores, want 2-256", a.ID, a.MaxCores)
		}
		if a.CoresPerExecutor > 0 {
			fixed++
			if a.MaxCores%a.CoresPerExecutor != 0 {
				t.Errorf("%s: %d cores is not a multiple of %d", a.ID, a.MaxCores, a.CoresPerExecutor)
			}
		}
	}
	if fixed != c.Apps/2 {
		t.Errorf("%d apps fix CoresPerExecutor, want %d", fixed, c.Apps/2)
	}
	arrived, failed, joined := 0, 0, 0
	down := make([]bool, c.Workers)
	for r, round := range tr.Rounds {
		arrived += len(round.Arrive)
		if r > 0 {
			joined += len(round.Join)
		}
		for _, w := range round.Join {
			down[w] = false
		}
		if len(round.Fail) > 0 {
			if want := c.Workers / 10; len(round.Fail) != want {
				t.Errorf("round %d: %d workers fail, want %d", r, len(round.Fail), want)
			}
			if r%c.StormEvery != 0 {
				t.Errorf("storm in round %d, not a multiple of %d", r, c.StormEvery)
			}
		}
		for _, w := range round.Fail {
			if down[w] {
				t.Errorf("round %d: worker %d fails while down", r, w)
			}
			down[w] = true
			failed++
		}
	}
	if arrived != c.Apps {
		t.Errorf("%d apps arrive, want %d", arrived, c.Apps)
	}
	if failed == 0 || joined == 0 {
		t.Errorf("%d failures and %d returns, want some of each", failed, joined)
	}
}

func TestStormConfigValidate(t *testing.T) {
	for name, mutate := range map[string]func(*StormConfig){
		"no workers":     func(c *StormConfig) { c.Workers = 0 },
		"no rounds":      func(c *StormConfig) { c.Rounds = 0 },
		"fraction > 1":   func(c *StormConfig) { c.StormFraction = 1.5 },
		"empty lifetime": func(c *StormConfig) { c.MinLifetime, c.MaxLifetime = 10, 5 },
	} {
		c := DefaultStorm()
		mutate(&c)
		if _, err := StormTrace(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
