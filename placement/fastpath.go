package placement

// The Index's fast paths are chosen by what a policy says of itself, never
// by which policy it is, so that a policy registered from another package
// gets them as the built-in ones do. NewIndex asks, in this order:
//
//   - StepPolicy (spread, pack): decisions that are Spark's steps in one of
//     the orders of Orders(). The index walks the order from the first
//     usable worker and stops once the app is served (index_steps.go).
//   - FitPolicy (bestfit): best-fit decisions in one of those orders. The
//     index keeps the workers by free cores, then the order, and answers
//     best fit's questions by binary search (index_bestfit.go).
//   - IncrementalPolicy (gpushare's fgd and frag-fit): a Placer of the
//     policy's own, which the index keeps up to date (incremental.go).
//
// A policy with none of them is decided through StartExecutorsOnWorkers
// over every indexed worker (O(W) a round). A type wrapping a policy keeps
// a fast path only by forwarding its interface, as it forwards MinCoreUnit.
//
// On the first two paths the index makes the decisions itself, from the
// policy's spec, and does not call its Order or Assign (but for the apps
// the fit path hands to the ordinary round: index_bestfit.go): the spec is
// a promise that they decide alike. The spec's own Order and Assign are those
// decisions, for a policy to call or to embed (a type embedding a spec
// needs only a Name to be a StepPolicy or a FitPolicy). The index reads the
// spec once, when it is made; a spec it cannot walk (an order outside
// Orders(), a unit other than the policy's MinCoreUnit) leaves the policy
// on the ordinary path, which is always right.

// StepSpec is Spark's step-by-step placement: each step hands a worker
// CoresPerExecutor cores, or without a fixed size min(unit, cores still
// to assign), over the usable workers in the order (PLACEMENT.md, "Assign
// (spread and pack)").
type StepSpec struct {
	WorkerOrder string // one of Orders(), or Spark's spelling; "" is the default
	Unit        int    // as Options.MinCoreUnit (CoreUnit of it)
	Spread      bool   // one step to each worker in turn (spark.deploy.spreadOut), else each worker filled before the next
}

// StepPolicy is implemented by a policy that orders and assigns as its
// StepSpec does. What the index's walk relies on: Assign gives cores only
// to the first usable workers in the order (no more of them than the app
// can start executors or take steps) and sees the others only through
// their total free cores up to CoresLeft; the order is one the index can seek in (by free cores,
// free memory or ID, ties on the ID), so it can start where the usable
// workers start and stop where they end.
type StepPolicy interface {
	Policy
	Steps() StepSpec
}

// Steps is s itself, so that a type embedding a StepSpec is a StepPolicy.
func (s StepSpec) Steps() StepSpec { return s }

// MinCoreUnit is the spec's step without a fixed executor size.
func (s StepSpec) MinCoreUnit() int { return CoreUnit(s.Unit) }

// Order sorts workers in the spec's order (the default for an unknown one).
func (s StepSpec) Order(workers []Worker) { sortWorkers(workers, kindOf(s.WorkerOrder).compare) }

// Assign is the spec's steps over workers, already in its order.
func (s StepSpec) Assign(app App, workers []Worker) []int {
	return newSteps(app, workers, CoreUnit(s.Unit)).run(s.Spread)
}

// FitSpec is bestfit's placement: an app's grant in a round split into at
// most Pieces near-equal pieces (none below the unit), each put on the
// usable worker with the fewest free slots that holds it whole, first in
// the order among equals; what no worker holds whole goes to the largest,
// and the rest tops up the workers chosen (bestfit.go).
type FitSpec struct {
	WorkerOrder string // as StepSpec.WorkerOrder
	Unit        int    // as StepSpec.Unit
	Pieces      int    // the most workers one round's grant is split over; 0 or less: bestfit's 2
}

// FitPolicy is implemented by a policy that orders and assigns as its
// FitSpec does. What the index's walk relies on: the decisions depend on a
// worker only through its free slots (its free cores, or over the
// executor's size) and its place in the order, so that an index by free
// cores, then the order, finds "the fewest slots that hold n" by binary
// search. Where memory or custom resources bound a worker's slots instead
// the index decides that app over every worker (index_bestfit.go).
type FitPolicy interface {
	Policy
	Fit() FitSpec
}

// Fit is s itself, so that a type embedding a FitSpec is a FitPolicy.
func (s FitSpec) Fit() FitSpec { return s }

// MinCoreUnit is the spec's smallest piece without a fixed executor size.
func (s FitSpec) MinCoreUnit() int { return CoreUnit(s.Unit) }

// Order sorts workers in the spec's order (the default for an unknown one).
func (s FitSpec) Order(workers []Worker) { sortWorkers(workers, kindOf(s.WorkerOrder).compare) }

// Assign is the spec's best fit over workers, already in its order.
func (s FitSpec) Assign(app App, workers []Worker) []int {
	f := newFit(app, workers, CoreUnit(s.Unit))
	assignFit(f, s.pieces())
	return f.cores()
}

func (s FitSpec) pieces() int {
	if s.Pieces <= 0 {
		return bestFitPieces
	}
	return s.Pieces
}

// stepPath is what the index's walk takes of a StepPolicy's spec, read
// once: the hot path reads fields, not interface methods.
type stepPath struct {
	unit   int
	kind   orderKind
	spread bool
	on     bool // the Index has a step path
}

// stepPathOf is p's step path, and false when p is no StepPolicy or its
// spec cannot be walked. A value, not a pointer: StartExecutorsOnWorkers
// asks it every round, and a round allocated nothing for it before.
func stepPathOf(p Policy) (stepPath, bool) {
	sp, ok := p.(StepPolicy)
	if !ok {
		return stepPath{}, false
	}
	s := sp.Steps()
	kind, known := parseOrder(s.WorkerOrder)
	if !known || CoreUnit(s.Unit) != minCoreUnit(p) {
		return stepPath{}, false
	}
	return stepPath{unit: CoreUnit(s.Unit), kind: kind, spread: s.Spread, on: true}, true
}

// fitPath is what the index's walk takes of a FitPolicy's spec.
type fitPath struct {
	unit, pieces int
	kind         orderKind
	cmp          compareFunc // the order, ties by ID
}

// fitPathOf is p's fit path, and false when p is no FitPolicy or its spec
// cannot be walked.
func fitPathOf(p Policy) (fitPath, bool) {
	fp, ok := p.(FitPolicy)
	if !ok {
		return fitPath{}, false
	}
	s := fp.Fit()
	kind, known := parseOrder(s.WorkerOrder)
	if !known || CoreUnit(s.Unit) != minCoreUnit(p) {
		return fitPath{}, false
	}
	return fitPath{unit: CoreUnit(s.Unit), pieces: s.pieces(), kind: kind, cmp: kind.compare}, true
}
