package placement

// IncrementalPolicy is implemented by a policy that can keep a cluster's
// workers in a structure of its own and place an app on them without
// looking at every worker (gpushare's fgd and frag-fit): the third of the
// Index's fast paths (fastpath.go), taken by a policy that is neither a
// StepPolicy nor a FitPolicy. An Index of such a policy feeds its workers
// to the policy's Placer and asks it for each app of a round; the
// decisions are those of StartExecutorsOnWorkers over the Index's workers
// (in the Index's order, by ID for such policies). A type wrapping a
// Policy that does not forward NewPlacer is placed the ordinary way (O(W)
// a round).
type IncrementalPolicy interface {
	Policy
	NewPlacer() Placer
}

// Placer is an incremental placer of an IncrementalPolicy. Its workers are
// ordered by ID, as an Index orders them for a policy on neither the step
// nor the fit path.
type Placer interface {
	// Put adds a worker or replaces the one with its ID (the placer keeps
	// its own copy).
	Put(w Worker)
	// Delete removes the worker with the ID, if there.
	Delete(id string)
	// Accepts reports whether the placer can decide app (not, say, an app
	// with a Fits it cannot keep): the caller places the others the
	// ordinary way and Puts back the workers it gave executors.
	Accepts(app App) bool
	// PlaceApp places app's executors (an app it accepts) exactly as
	// StartExecutorsOnWorkers would place them, as one app of a round,
	// over the placer's workers, appends their launches to launches and
	// takes them off its workers.
	PlaceApp(app App, launches []Launch) []Launch
}

// Grant turns the cores a policy assigned to workers (cores[j] on
// workers[j], the usable workers in the policy's order) into the launches
// StartExecutorsOnWorkers makes of them for app, appended to launches, and
// takes them off the workers (their resource lists too, in place): for a
// Placer that decides as a round does.
func Grant(launches []Launch, p Policy, app App, workers []*Worker, cores []int) []Launch {
	g := newGrant(p, app)
	for j := 0; j < len(cores) && j < len(workers); j++ {
		launches = g.on(launches, workers[j], cores[j])
	}
	return launches
}

// ExecutorRoom is how many more executors app may hold (0 when none).
func ExecutorRoom(app App) int { return executorRoom(app) }

// roundPlacer is a round through an IncrementalPolicy's placer: app by
// app, as StartExecutorsOnWorkers takes them (each app is offered what the
// ones before it left, and the policy is asked once per app), the placer
// decides and the index takes the launches off its own workers. The apps
// the placer does not accept go, each run of them in one call, through
// StartExecutorsOnWorkers over every worker (the same decisions: the
// policy keeps the workers in the order given), and the workers they were
// given are put back into the placer.
func (x *Index) roundPlacer(apps []App) []Launch {
	var launches []Launch
	one := make([]App, 1)
	var declined []App // waiting for StartExecutorsOnWorkers
	flush := func() {
		if len(declined) == 0 {
			return
		}
		before := len(launches)
		launches = x.roundOverAll(declined, launches)
		for _, l := range launches[before:] {
			if s, ok := x.byID[l.WorkerID]; ok {
				x.placer.Put(s.w)
			}
		}
		declined = declined[:0]
	}
	for _, app := range apps {
		if app.CoresLeft <= 0 || executorRoom(app) == 0 {
			continue // a round skips it
		}
		if !x.placer.Accepts(app) {
			declined = append(declined, app)
			continue
		}
		flush()
		one[0] = app
		before := len(launches)
		launches = x.placer.PlaceApp(app, launches)
		for _, l := range launches[before:] {
			x.take(l, one)
		}
	}
	flush()
	return launches
}
