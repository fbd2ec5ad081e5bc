package placement

// UnitPolicy is implemented by a Policy that steps by more than one core
// (every built-in policy does). StartExecutorsOnWorkers needs the unit to
// tell which workers are usable for an app's first step; a policy without
// the method is taken to step by one core, as Spark. A type wrapping a
// Policy must forward MinCoreUnit too.
type UnitPolicy interface {
	Policy
	MinCoreUnit() int
}

// minCoreUnit returns p's step in cores (CoreUnit of what it reports), 1
// when p does not report one.
func minCoreUnit(p Policy) int {
	if u, ok := p.(UnitPolicy); ok {
		return CoreUnit(u.MinCoreUnit())
	}
	return 1
}

// firstStep is the smallest executor the app may start on a worker: its fixed
// size, or otherwise the unit (less when the app needs fewer cores).
func firstStep(app App, unit int) int { return ExecutorStep(app.CoresPerExecutor, unit, app.CoresLeft) }

// StartExecutorsOnWorkers runs one FIFO scheduling round: each app in the order
// given, in turn, is offered what the apps before it left. An app with no
// cores left or at its executor limit is skipped. The usable workers for an
// app have memory for one executor and cores for its first step; the policy
// orders them and assigns cores, which become launches: executors of
// CoresPerExecutor cores when the app fixed the size, otherwise one executor
// per worker holding all the cores assigned there.
//
// Whatever the policy returns, a round never over-commits a worker's cores or
// memory and never grants an app more than CoresLeft or more executors than
// its limit allows. Workers are identified by ID; a repeated ID is ignored.
// The caller's slices are not modified.
func StartExecutorsOnWorkers(apps []App, workers []Worker, p Policy) []Launch {
	if p == nil || len(workers) == 0 || len(apps) == 0 {
		return nil
	}
	if _, ok := stepPathOf(p); ok {
		// A StepPolicy (Spark's policies): walk an index of the workers
		// (index_steps.go) rather than filter and sort them for every app.
		// Same decisions.
		return buildIndex(p, workers).Round(apps)
	}
	pool := uniqueWorkers(workers)
	p.Order(pool)
	unit := minCoreUnit(p)

	var launches []Launch
	usable := make([]Worker, 0, len(pool))
	from := make([]int, 0, len(pool)) // from[j]: index in pool of usable[j]
	for _, app := range apps {
		if app.CoresLeft <= 0 || executorRoom(app) == 0 {
			continue
		}
		first, memory := firstStep(app, unit), max(app.MemoryPerExecutorMB, 0)
		usable, from = usable[:0], from[:0]
		for i, w := range pool {
			if w.CoresFree >= first && w.MemoryFreeMB >= memory && ResourceFit(w.Resources, app.ResourcesPerExecutor) >= 1 && app.takes(w) {
				usable = append(usable, w)
				from = append(from, i)
			}
		}
		if len(usable) == 0 {
			continue
		}
		// pool is kept in the policy's order, so usable normally is already
		// sorted and Order only confirms it; if the policy reorders anyway,
		// find each worker again by ID.
		p.Order(usable)
		if !alignedByID(usable, from, pool) {
			from = reindexByID(usable, pool, from)
		}
		cores := p.Assign(app, usable)
		before := len(launches)
		launches = grant(launches, p, app, usable, from, pool, cores)
		if len(launches) > before {
			p.Order(pool) // re-sort the workers this app changed
		}
	}
	return launches
}

// grant turns the cores a policy assigned into launches and subtracts them
// from pool, clamping anything the policy got wrong.
func grant(launches []Launch, p Policy, app App, usable []Worker, from []int, pool []Worker, cores []int) []Launch {
	g := newGrant(p, app)
	for j := 0; j < len(cores) && j < len(usable); j++ {
		launches = g.on(launches, &pool[from[j]], cores[j])
	}
	return launches
}

// grantState is one app's grant in progress: what it may still be given.
type grantState struct {
	p                       Policy
	app                     App
	memory, coresLeft, room int
	asks                    bool   // the app asks custom resources
	tag                     string // Tag(app), worked out once per app
}

func newGrant(p Policy, app App) grantState {
	return grantState{p: p, app: app, memory: max(app.MemoryPerExecutorMB, 0), coresLeft: app.CoresLeft, room: executorRoom(app),
		asks: asksResources(app), tag: Tag(app)}
}

// on gives w the executors that c assigned cores make (no more than w, the
// app's cores left and executor room allow), takes them off w and appends
// their launches.
func (g *grantState) on(launches []Launch, w *Worker, c int) []Launch {
	app := g.app
	c = min(c, w.CoresFree, g.coresLeft)
	if c <= 0 || g.room == 0 {
		return launches
	}
	size, count := c, 1
	if app.CoresPerExecutor > 0 {
		size, count = app.CoresPerExecutor, c/app.CoresPerExecutor
	}
	count = min(count, g.room)
	if g.asks {
		count = min(count, ResourceFit(w.Resources, app.ResourcesPerExecutor))
	}
	if g.memory > 0 {
		count = min(count, w.MemoryFreeMB/g.memory)
	}
	if count <= 0 {
		return launches
	}
	for range count {
		var picked map[string][]int
		if g.asks {
			picked = pickFor(g.p, app, w) // fits: counted above
		}
		launches = append(launches, Launch{AppID: app.ID, WorkerID: w.ID, Cores: size, MemoryMB: g.memory, Resources: picked})
	}
	w.CoresFree -= size * count
	w.MemoryFreeMB -= g.memory * count
	g.coresLeft -= size * count
	g.room -= count
	return launches
}

// uniqueWorkers copies workers (their resources too), keeping the first of
// any repeated ID.
func uniqueWorkers(workers []Worker) []Worker {
	seen := make(map[string]struct{}, len(workers))
	out := make([]Worker, 0, len(workers))
	for _, w := range workers {
		if _, dup := seen[w.ID]; dup {
			continue
		}
		seen[w.ID] = struct{}{}
		w.Resources = cloneResources(w.Resources)
		out = append(out, w)
	}
	return out
}

func alignedByID(usable []Worker, from []int, pool []Worker) bool {
	for j, w := range usable {
		if pool[from[j]].ID != w.ID {
			return false
		}
	}
	return true
}

func reindexByID(usable []Worker, pool []Worker, from []int) []int {
	index := make(map[string]int, len(pool))
	for i, w := range pool {
		index[w.ID] = i
	}
	for j, w := range usable {
		from[j] = index[w.ID]
	}
	return from
}
