package placement

import (
	"fmt"
	"strings"
	"time"

	policy "github.com/berth-cluster/berth/placement"
)

// simWorker is one worker as the master sees it.
type simWorker struct {
	spec      WorkerSpec
	alive     bool
	coresFree int
	memFree   int
}

// executor is one running executor of an app.
type executor struct {
	worker int // index into state.workers
	cores  int
	mem    int
}

// simApp is one application as the master sees it.
type simApp struct {
	spec    AppSpec
	present bool // arrived and not finished
	execs   []executor
	held    int        // cores held by execs
	lost    []executor // executors lost at the start of the current round
}

// coresLeft is the app's outstanding demand.
func (a *simApp) coresLeft() int { return a.spec.MaxCores - a.held }

// state is the cluster between rounds.
type state struct {
	workers []simWorker
	apps    []simApp
	queue   []int // present apps in arrival (FIFO) order
}

func newState(tr *Trace) *state {
	s := &state{workers: make([]simWorker, len(tr.Workers)), apps: make([]simApp, len(tr.Apps))}
	for i, w := range tr.Workers {
		s.workers[i].spec = w
	}
	for i, a := range tr.Apps {
		s.apps[i].spec = a
	}
	return s
}

// dropExecutors removes the executors of every present app for which lost
// reports true, returning their cores and memory to alive workers; the cores
// go back to the app's demand.
func (s *state) dropExecutors(lost func(e executor) bool) {
	for _, a := range s.queue {
		app := &s.apps[a]
		kept := app.execs[:0]
		for _, e := range app.execs {
			if !lost(e) {
				kept = append(kept, e)
				continue
			}
			app.held -= e.cores
			app.lost = append(app.lost, e)
			if w := &s.workers[e.worker]; w.alive {
				w.coresFree += e.cores
				w.memFree += e.mem
			}
		}
		app.execs = kept
	}
}

// applyRound applies the events of r (not the scheduling).
func (s *state) applyRound(r Round) {
	for _, a := range s.queue {
		s.apps[a].lost = s.apps[a].lost[:0]
	}
	if r.MasterLoss {
		s.dropExecutors(func(executor) bool { return true })
	}
	if len(r.Fail) > 0 {
		failed := make([]bool, len(s.workers))
		for _, w := range r.Fail {
			failed[w] = true
			s.workers[w].alive = false
		}
		s.dropExecutors(func(e executor) bool { return failed[e.worker] })
	}
	for _, w := range r.Join {
		sw := &s.workers[w]
		if sw.alive {
			continue
		}
		// A worker comes back empty: nothing of the old executors survives.
		sw.alive, sw.coresFree, sw.memFree = true, sw.spec.Cores, sw.spec.MemoryMB
	}
	if len(r.Finish) > 0 {
		finished := make([]bool, len(s.apps))
		for _, a := range r.Finish {
			if !s.apps[a].present {
				continue
			}
			finished[a] = true
			app := &s.apps[a]
			for _, e := range app.execs {
				if w := &s.workers[e.worker]; w.alive {
					w.coresFree += e.cores
					w.memFree += e.mem
				}
			}
			app.execs, app.held, app.present = nil, 0, false
		}
		kept := s.queue[:0]
		for _, a := range s.queue {
			if !finished[a] {
				kept = append(kept, a)
			}
		}
		s.queue = kept
	}
	for _, a := range r.Arrive {
		if !s.apps[a].present {
			s.apps[a].present = true
			s.queue = append(s.queue, a)
		}
	}
}

// waiting returns the apps with demand, in FIFO order, as the policy sees
// them, and their indices.
func (s *state) waiting() ([]policy.App, []int) {
	var apps []policy.App
	var index []int
	for _, a := range s.queue {
		app := &s.apps[a]
		if app.coresLeft() <= 0 {
			continue
		}
		apps = append(apps, policy.App{
			ID:                  app.spec.ID,
			CoresLeft:           app.coresLeft(),
			CoresPerExecutor:    app.spec.CoresPerExecutor,
			MemoryPerExecutorMB: app.spec.MemoryPerExecutorMB,
			ExecutorLimit:       policy.Unlimited,
			Executors:           len(app.execs),
		})
		index = append(index, a)
	}
	return apps, index
}

// aliveWorkers returns the ALIVE workers with their free capacity, in worker
// order (the policy sorts its own copy).
func (s *state) aliveWorkers() []policy.Worker {
	out := make([]policy.Worker, 0, len(s.workers))
	for _, w := range s.workers {
		if w.alive {
			out = append(out, policy.Worker{ID: w.spec.ID, CoresFree: w.coresFree, MemoryFreeMB: w.memFree})
		}
	}
	return out
}

// launch applies launches, refusing any that would over-commit a worker, go
// to a dead worker or exceed an app's demand.
func (s *state) launch(launches []policy.Launch, workerIndex, appIndex map[string]int) error {
	for _, l := range launches {
		wi, ok := workerIndex[l.WorkerID]
		if !ok {
			return fmt.Errorf("launch on unknown worker %q", l.WorkerID)
		}
		ai, ok := appIndex[l.AppID]
		if !ok {
			return fmt.Errorf("launch for unknown app %q", l.AppID)
		}
		w, app := &s.workers[wi], &s.apps[ai]
		switch {
		case !w.alive:
			return fmt.Errorf("launch for %s on dead worker %s", l.AppID, l.WorkerID)
		case !app.present:
			return fmt.Errorf("launch for absent app %s", l.AppID)
		case l.Cores <= 0 || l.Cores > w.coresFree || l.MemoryMB > w.memFree:
			return fmt.Errorf("over-commit: %s wants %d cores/%d MB on %s with %d cores/%d MB free",
				l.AppID, l.Cores, l.MemoryMB, l.WorkerID, w.coresFree, w.memFree)
		case l.Cores > app.coresLeft():
			return fmt.Errorf("%s granted %d cores with %d left", l.AppID, l.Cores, app.coresLeft())
		}
		w.coresFree -= l.Cores
		w.memFree -= l.MemoryMB
		app.execs = append(app.execs, executor{worker: wi, cores: l.Cores, mem: l.MemoryMB})
		app.held += l.Cores
	}
	return nil
}

// RunConfig selects one policy at one unit.
type RunConfig struct {
	Policy  string
	Unit    int
	RefUnit int // executors below this many cores count as small
	// AfterRound, when set, is called after every round (tests use it to
	// check invariants).
	AfterRound func(round int, s *state)
}

// Name is the row label, e.g. "spread-u4".
func (rc RunConfig) Name() string { return fmt.Sprintf("%s-u%d", rc.Policy, rc.Unit) }

// Snapshot is the placement of every present app after a labelled round.
type Snapshot struct {
	Label string
	Apps  []AppPlacement
}

// AppPlacement lists one app's executors as "worker:cores" in the order they
// were started, e.g. "w2:6 w1:6".
type AppPlacement struct {
	ID        string
	Executors string
	Lost      string // executors lost at the start of the round, same form
	Held      int
	Wanted    int
}

// Result is one policy's replay of one trace.
type Result struct {
	Name, Policy string
	Unit         int
	Metrics      Metrics // deterministic for a trace
	Timing       Timing  // wall time: the only non-deterministic part
	Snapshots    []Snapshot
}

// Run replays tr under one policy.
func Run(tr *Trace, rc RunConfig) (*Result, error) {
	p, err := policy.New(rc.Policy, policy.Options{MinCoreUnit: rc.Unit})
	if err != nil {
		return nil, err
	}
	s := newState(tr)
	workerIndex := make(map[string]int, len(tr.Workers))
	for i, w := range tr.Workers {
		workerIndex[w.ID] = i
	}
	appIndex := make(map[string]int, len(tr.Apps))
	for i, a := range tr.Apps {
		appIndex[a.ID] = i
	}
	res := &Result{Name: rc.Name(), Policy: rc.Policy, Unit: rc.Unit}
	acc := newAccumulator(tr.largestWorker(), policy.CoreUnit(rc.Unit), rc.RefUnit)
	durations := make([]time.Duration, 0, len(tr.Rounds))

	for r, round := range tr.Rounds {
		s.applyRound(round)
		apps, _ := s.waiting()
		workers := s.aliveWorkers()

		start := time.Now()
		launches := policy.StartExecutorsOnWorkers(apps, workers, p)
		durations = append(durations, time.Since(start))

		if err := s.launch(launches, workerIndex, appIndex); err != nil {
			return nil, fmt.Errorf("%s, round %d: %w", rc.Name(), r+1, err)
		}
		acc.add(s)
		if round.Label != "" {
			res.Snapshots = append(res.Snapshots, s.snapshot(round.Label))
		}
		if rc.AfterRound != nil {
			rc.AfterRound(r, s)
		}
	}
	res.Metrics = acc.result()
	res.Timing = timingOf(durations)
	return res, nil
}

func (s *state) snapshot(label string) Snapshot {
	snap := Snapshot{Label: label}
	for _, a := range s.queue {
		app := &s.apps[a]
		parts := make([]string, len(app.execs))
		for i, e := range app.execs {
			parts[i] = fmt.Sprintf("%s:%d", s.workers[e.worker].spec.ID, e.cores)
		}
		lost := make([]string, len(app.lost))
		for i, e := range app.lost {
			lost[i] = fmt.Sprintf("%s:%d", s.workers[e.worker].spec.ID, e.cores)
		}
		ap := AppPlacement{ID: app.spec.ID, Executors: strings.Join(parts, " "), Lost: strings.Join(lost, " "), Held: app.held, Wanted: app.spec.MaxCores}
		if ap.Executors == "" {
			ap.Executors = "-"
		}
		snap.Apps = append(snap.Apps, ap)
	}
	return snap
}
