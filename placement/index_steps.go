package placement

// A StepPolicy's fast path in the Index (spread's and pack's). Its steps
// give cores only to the first usable workers in the order, as many as the
// app can take steps, and see the rest only through their free cores up
// to what the app may take; so a round walks the order from where the
// usable workers start, stops as soon as it knows both, and runs the steps
// (steps.go) on those workers alone: the decisions are the spec's Assign's
// over every usable worker.

// placeApp is one app of a StepPolicy's round: the usable workers
// are walked in order only as far as the app could use them, the steps run
// over those, and the workers given executors move in the order.
func (x *Index) placeApp(app App, launches []Launch) []Launch {
	p := &x.step
	room := executorRoom(app)
	if app.CoresLeft <= 0 || room == 0 {
		return launches
	}
	first, memory := firstStep(app, p.unit), max(app.MemoryPerExecutorMB, 0)
	// No more workers than steps can get one: k (first, ExecutorStep's, is
	// the largest step, so CoresLeft holds at most ceilDiv of it). Past
	// them, the walk goes on only until it knows min(CoresLeft, free cores
	// of all usable workers) as far as the steps can tell (toAssign below).
	k := min(room, ceilDiv(app.CoresLeft, first))
	big := max(p.unit, first)
	cand, sum, sumK := x.cand[:0], 0, 0
	x.walkUsable(first, memory, app, func(s *slot) bool {
		if len(cand) < k {
			cand = append(cand, s)
			sumK = addCores(sumK, s.w.CoresFree)
		}
		sum = addCores(sum, s.w.CoresFree)
		return len(cand) < k || (sum < app.CoresLeft && sum < addCores(sumK, big))
	})
	x.cand = cand
	if len(cand) == 0 {
		return launches
	}
	ws := x.ws[:0]
	for _, s := range cand {
		ws = append(ws, s.w)
	}
	x.ws = ws
	st := &x.steps
	st.reset(app, ws, p.unit)
	st.toAssign = min(max(app.CoresLeft, 0), sum)
	cores := st.run(p.spread)
	g := newGrant(x.policy, app) // the policy's, for its ResourcePicker
	for j, s := range cand {
		launches = x.grantOn(&g, s, cores[j], launches)
	}
	return launches
}

// walkUsable calls fn on each worker in order that can hold the first step
// of app, starting where such workers start in the order and stopping
// where none can follow, until fn returns false.
func (x *Index) walkUsable(first, memory int, app App, fn func(*slot) bool) {
	usable := func(w Worker) bool {
		return w.CoresFree >= first && w.MemoryFreeMB >= memory && ResourceFit(w.Resources, app.ResourcesPerExecutor) >= 1 && app.takes(w)
	}
	if x.byCores != nil {
		// The buckets start at first cores free and stop there (in the
		// descending order); skipped words hold no usable worker.
		x.byCores.walk(first, memory, func(s *slot) bool { return !usable(s.w) || fn(s) })
		return
	}
	// The memory orders, and the orders by free cores once the buckets
	// gave their workers to the sorted store (buckets.go: overflow).
	c, i := 0, 0
	switch x.step.kind {
	case byCoresAsc:
		c, i = x.order.seek(&slot{w: Worker{CoresFree: first}}) // rank 0: before every worker
	case byMemoryAsc:
		c, i = x.order.seek(&slot{w: Worker{MemoryFreeMB: memory}})
	}
	// A chunk where no worker has first cores and memory free holds no
	// usable worker; skipping it never skips a worker whose order ends the
	// walk (those have fewer cores or less memory than first or memory).
	x.order.walkPeaks(c, i, first, memory, func(s *slot) bool {
		switch {
		case x.step.kind == byCoresDesc && s.w.CoresFree < first,
			x.step.kind == byMemoryDesc && s.w.MemoryFreeMB < memory:
			return false // the rest have less
		case !usable(s.w):
			return true
		}
		return fn(s)
	})
}
