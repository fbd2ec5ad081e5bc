package placement_test

// Policies written outside package placement get the Index's fast paths by
// implementing StepPolicy or FitPolicy, as the built-in ones do. Two are
// registered here, from init as any package would register them, so that
// every property test that walks placement.Names() runs them too:
// "test-outside-pack" is Spark's pack under another name, and
// "test-outside-fit3" is a best fit that splits a grant over up to three
// workers (bestfit: two), decisions no built-in policy makes.
//
// Which path ran is seen through the policies themselves: the fast paths
// make their decisions from the spec and never call Order or Assign, and
// the ordinary round (StartExecutorsOnWorkers over every worker) calls
// both for every app. So the test needs nothing of the index's internals.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

const (
	outsidePack = "test-outside-pack"
	outsideFit3 = "test-outside-fit3"
)

func init() {
	placement.MustRegister(outsidePack, func(opts placement.Options) (placement.Policy, error) {
		return &outsideSteps{StepSpec: placement.StepSpec{WorkerOrder: opts.Order, Unit: opts.MinCoreUnit}, calls: &calls{}}, nil
	})
	placement.MustRegister(outsideFit3, func(opts placement.Options) (placement.Policy, error) {
		return &outsideFit{FitSpec: placement.FitSpec{WorkerOrder: opts.Order, Unit: opts.MinCoreUnit, Pieces: 3}, calls: &calls{}}, nil
	})
}

// calls counts a policy's Order and Assign calls: the ordinary round's.
type calls struct{ order, assign atomic.Int64 }

func (c *calls) total() int64 { return c.order.Load() + c.assign.Load() }

// outsideSteps embeds its spec (Steps, MinCoreUnit, Order, Assign) and
// counts the calls of Order and Assign.
type outsideSteps struct {
	placement.StepSpec
	calls *calls
}

func (p *outsideSteps) Name() string { return outsidePack }

func (p *outsideSteps) Order(ws []placement.Worker) {
	p.calls.order.Add(1)
	p.StepSpec.Order(ws)
}

func (p *outsideSteps) Assign(app placement.App, ws []placement.Worker) []int {
	p.calls.assign.Add(1)
	return p.StepSpec.Assign(app, ws)
}

// outsideFit is outsideSteps for a FitSpec.
type outsideFit struct {
	placement.FitSpec
	calls *calls
}

func (p *outsideFit) Name() string { return outsideFit3 }

func (p *outsideFit) Order(ws []placement.Worker) {
	p.calls.order.Add(1)
	p.FitSpec.Order(ws)
}

func (p *outsideFit) Assign(app placement.App, ws []placement.Worker) []int {
	p.calls.assign.Add(1)
	return p.FitSpec.Assign(app, ws)
}

// callsOf is the counter of one of the policies above.
func callsOf(p placement.Policy) *calls {
	switch p := p.(type) {
	case *outsideSteps:
		return p.calls
	case *outsideFit:
		return p.calls
	}
	panic(fmt.Sprintf("%T counts no calls", p))
}

// ordinary hides every fast path of a policy (it forwards only Policy and
// MinCoreUnit): an Index of it decides every round through
// StartExecutorsOnWorkers over every worker, the slow path.
type ordinary struct{ p placement.Policy }

func (o ordinary) Name() string                                        { return o.p.Name() }
func (o ordinary) Order(ws []placement.Worker)                         { o.p.Order(ws) }
func (o ordinary) Assign(a placement.App, ws []placement.Worker) []int { return o.p.Assign(a, ws) }
func (o ordinary) MinCoreUnit() int                                    { return o.p.(placement.UnitPolicy).MinCoreUnit() }

// byID sorts copies of workers by ID, to compare two indexes' workers
// whatever order each keeps.
func byID(ws []placement.Worker) []placement.Worker {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b placement.Worker) int { return strings.Compare(a.ID, b.ID) })
	return ws
}

// An Index of a policy from outside the package takes the fast path its
// interface offers, round after round while workers join, change and
// leave, and decides as the slow path does: the launches and the workers
// left are those of an Index of the same policy with its fast path hidden.
func TestOutsidePolicyTakesTheFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 3434))
	for _, name := range []string{outsidePack, outsideFit3} {
		launches, fastApps := 0, 0
		for c := range 150 {
			opts := placement.Options{Order: pick2(r, append([]string{""}, allOrders...)), MinCoreUnit: pick(r, 0, 1, 2, 3, 4)}
			p, q := mustNew(t, name, opts), mustNew(t, name, opts)
			fast, slow := placement.NewIndex(p), placement.NewIndex(ordinary{q})
			launched := 0 // in this case
			for round := range 12 {
				for range r.IntN(10) {
					id := fmt.Sprintf("w%c%d", 'a'+r.IntN(6), r.IntN(40))
					if r.IntN(5) == 0 {
						fast.Delete(id)
						slow.Delete(id)
						continue
					}
					// As bestFitWorkers: many equal free cores, most
					// with memory to spare, some short of it.
					w := placement.Worker{ID: id, CoresFree: pick(r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 24)}
					if w.MemoryFreeMB = w.CoresFree*4096 + pick(r, 0, 1024, 8192); r.IntN(8) == 0 {
						w.MemoryFreeMB = pick(r, 0, 512, 1024, 2048)
					}
					randomGPUs(r, &w)
					fast.Put(w)
					slow.Put(w)
				}
				// Half the rounds keep to apps every fast path decides
				// itself (bestfit's hands a fixed-size app whose memory
				// or resources bound the slots to the ordinary round):
				// there the policy must not be called at all.
				easy := round%2 == 0
				apps := bestFitApps(r)
				for i := range apps {
					if easy && apps[i].CoresPerExecutor > 0 {
						apps[i].MemoryPerExecutorMB = 0
					} else if !easy && r.IntN(4) == 0 {
						apps[i].ResourcesPerExecutor = map[string]int{"gpu": placement.Whole}
					}
				}
				before := callsOf(p).total()
				got, want := fast.Round(apps), slow.Round(apps)
				if !same(got, want) {
					t.Fatalf("%s case %d round %d %+v: fast path %+v\nslow path %+v\napps %+v", name, c, round, opts, got, want, apps)
				}
				if left, wantLeft := byID(fast.Workers()), byID(slow.Workers()); !same(left, wantLeft) {
					t.Fatalf("%s case %d round %d: the fast path leaves %+v\nthe slow path %+v", name, c, round, left, wantLeft)
				}
				if n := callsOf(p).total() - before; easy && n != 0 {
					t.Fatalf("%s case %d round %d: the index called Order or Assign %d times: not the fast path", name, c, round, n)
				}
				if easy {
					fastApps += len(apps)
				}
				launched += len(got)
			}
			launches += launched
			if name == outsidePack && callsOf(p).total() != 0 {
				t.Fatalf("%s case %d: a step policy's Order or Assign called %d times", name, c, callsOf(p).total())
			}
			if callsOf(q).assign.Load() == 0 && launched > 0 {
				t.Fatalf("%s case %d: the slow path never called Assign: it was not the slow path", name, c)
			}
		}
		t.Logf("%s: %d launches compared, %d apps decided on the fast path alone", name, launches, fastApps)
		if launches < 3000 || fastApps < 1000 {
			t.Fatalf("%s: only %d launches, %d apps on the fast path: the generator is broken", name, launches, fastApps)
		}
	}
}

// The hook sees the ordinary round when it runs: bestfit's walk hands a
// fixed-size app that asks for GPUs to StartExecutorsOnWorkers, which
// calls the policy; and StartExecutorsOnWorkers itself walks an index of
// an outside StepPolicy, as it does for spread and pack.
func TestOutsidePolicyCallsShowThePath(t *testing.T) {
	workers := workersAt(65536, 8, 7, 6)
	workers[0].Resources = map[string][]int{"gpu": {placement.Whole, placement.Whole}}
	gpuApp := placement.App{ID: "gpu", CoresLeft: 4, CoresPerExecutor: 2, ExecutorLimit: placement.Unlimited,
		ResourcesPerExecutor: map[string]int{"gpu": placement.Whole}}
	plain := placement.App{ID: "plain", CoresLeft: 3, ExecutorLimit: placement.Unlimited}

	fit := mustNew(t, outsideFit3, placement.Options{MinCoreUnit: 1})
	x := placement.NewIndex(fit)
	for _, w := range workers {
		x.Put(w)
	}
	x.Round([]placement.App{plain})
	if n := callsOf(fit).total(); n != 0 {
		t.Fatalf("%s: an app without a fixed size called the policy %d times", outsideFit3, n)
	}
	x.Round([]placement.App{gpuApp})
	if callsOf(fit).assign.Load() != 1 {
		t.Fatalf("%s: a fixed-size app asking for GPUs called Assign %d times, want 1 (the ordinary round)", outsideFit3, callsOf(fit).assign.Load())
	}

	for _, order := range allOrders {
		opts := placement.Options{Order: order, MinCoreUnit: 2}
		steps := mustNew(t, outsidePack, opts)
		apps := []placement.App{plain, gpuApp}
		got := placement.StartExecutorsOnWorkers(apps, workers, steps)
		if n := callsOf(steps).total(); n != 0 {
			t.Errorf("%s %s: StartExecutorsOnWorkers called the policy %d times: not the index", outsidePack, order, n)
		}
		slow := mustNew(t, outsidePack, opts)
		if want := placement.StartExecutorsOnWorkers(apps, workers, ordinary{slow}); !same(got, want) || callsOf(slow).total() == 0 {
			t.Errorf("%s %s: %+v, the ordinary round %+v (%d calls)", outsidePack, order, got, want, callsOf(slow).total())
		}
		if want := placement.StartExecutorsOnWorkers(apps, workers, mustNew(t, "pack", opts)); !same(got, want) {
			t.Errorf("%s %s: %+v, pack %+v", outsidePack, order, got, want)
		}
	}
}

// unitLiar claims a spec whose unit is not its MinCoreUnit.
type unitLiar struct{ *outsideSteps }

func (u unitLiar) MinCoreUnit() int { return 1 }

// A spec the index cannot walk leaves the policy on the ordinary path,
// which is right whatever the policy does: an order outside Orders(), a
// unit other than the policy's own. So does a wrapper that does not
// forward the interface.
func TestFastPathNeedsAWalkableSpec(t *testing.T) {
	workers := workersAt(65536, 8, 7, 6, 5)
	apps := []placement.App{{ID: "a", CoresLeft: 9, ExecutorLimit: placement.Unlimited}}
	unknownOrder := &outsideSteps{StepSpec: placement.StepSpec{WorkerOrder: "by-colour"}, calls: &calls{}}
	liar := unitLiar{&outsideSteps{StepSpec: placement.StepSpec{Unit: 4}, calls: &calls{}}}
	wrapped := mustNew(t, outsidePack, placement.Options{})
	for _, tc := range []struct {
		p     placement.Policy
		calls *calls
	}{
		{unknownOrder, unknownOrder.calls},
		{liar, liar.calls},
		{named{wrapped, "renamed"}, callsOf(wrapped)},
	} {
		x := placement.NewIndex(tc.p)
		for _, w := range workers {
			x.Put(w)
		}
		got := x.Round(apps)
		if tc.calls.assign.Load() != 1 {
			t.Errorf("%T: Assign called %d times, want 1: the ordinary round", tc.p, tc.calls.assign.Load())
		}
		if want := placement.StartExecutorsOnWorkers(apps, workers, ordinary{tc.p}); !same(got, want) {
			t.Errorf("%T: %+v, the ordinary round %+v", tc.p, got, want)
		}
	}
}
