package placement

// steps is one app's assignment over a list of workers, in the step-by-step
// manner of Spark's scheduleExecutorsOnWorkers. Spark re-sums the executors
// assigned so far inside every check, which costs O(W) per check and
// O(W²·C/step) per app; steps keeps that sum as a counter, so a check is O(1)
// and an app costs O(W + steps) while making exactly the same decisions.
type steps struct {
	workers  []Worker
	unit     int   // step when the app did not fix its executor size: the policy's CoreUnit
	fixed    int   // CoresPerExecutor, or 0
	memory   int   // memory per executor, never negative
	room     int   // executors the app may still start
	toAssign int   // cores still to assign
	assigned []int // cores assigned on each worker
	execs    []int // executors started on each worker
	started  int   // sum of execs
	resFit   []int // executors each worker's resources hold; nil: no resources asked
	active   []int // run's workers still taking steps
}

func newSteps(app App, workers []Worker, unit int) *steps {
	s := &steps{}
	s.reset(app, workers, unit)
	return s
}

// reset makes s app's assignment over workers, its counters' memory
// reused.
func (s *steps) reset(app App, workers []Worker, unit int) {
	*s = steps{
		workers:  workers,
		unit:     unit,
		fixed:    max(app.CoresPerExecutor, 0),
		memory:   max(app.MemoryPerExecutorMB, 0),
		room:     executorRoom(app),
		assigned: zeroed(s.assigned, len(workers)),
		execs:    zeroed(s.execs, len(workers)),
		active:   s.active[:0],
		resFit:   resourceFits(app, workers),
	}
	s.toAssign = min(max(app.CoresLeft, 0), sumCoresFree(workers))
}

// zeroed is buf with n zeroes, reallocated only when too short.
func zeroed[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// executorRoom is how many more executors app may hold.
func executorRoom(app App) int {
	if app.ExecutorLimit <= 0 {
		return 0
	}
	return max(app.ExecutorLimit-max(app.Executors, 0), 0)
}

// sumCoresFree adds the free cores, ignoring negative entries and saturating
// instead of overflowing.
func sumCoresFree(workers []Worker) int {
	sum := 0
	for _, w := range workers {
		if w.CoresFree > 0 {
			if sum > Unlimited-w.CoresFree {
				return Unlimited
			}
			sum += w.CoresFree
		}
	}
	return sum
}

// step is the number of cores the next step hands out.
func (s *steps) step() int { return ExecutorStep(s.fixed, s.unit, s.toAssign) }

// canTake reports whether worker i can take the next step (Spark's
// canLaunchExecutorForApp).
func (s *steps) canTake(i int) bool {
	step := s.step()
	if step <= 0 || s.toAssign < step {
		return false
	}
	w := s.workers[i]
	if w.CoresFree-s.assigned[i] < step {
		return false
	}
	if s.fixed == 0 && s.execs[i] > 0 {
		return true // more cores for this worker's one executor
	}
	// A new executor: it needs memory, resources and room under the
	// executor limit (Spark's enoughMemory, enoughResources, underLimit).
	// execs[i]*memory never exceeds MemoryFreeMB, so it cannot overflow.
	if s.resFit != nil && s.execs[i] >= s.resFit[i] {
		return false
	}
	return w.MemoryFreeMB-s.execs[i]*s.memory >= s.memory && s.started < s.room
}

// take gives worker i the next step.
func (s *steps) take(i int) {
	step := s.step()
	s.toAssign -= step
	s.assigned[i] += step
	if s.fixed > 0 || s.execs[i] == 0 {
		s.execs[i]++
		s.started++
	}
}

// run hands out steps: spread gives every worker that can take a step one
// step per pass; pack lets each worker take steps until it cannot. As in
// Spark, a worker that cannot take a step at the end of a pass is dropped for
// good.
func (s *steps) run(spread bool) []int {
	active := s.active[:0]
	defer func() { s.active = active[:0] }()
	for i := range s.workers {
		if s.canTake(i) {
			active = append(active, i)
		}
	}
	for len(active) > 0 {
		for _, i := range active {
			for s.canTake(i) {
				s.take(i)
				if spread {
					break
				}
			}
			if s.toAssign == 0 {
				return s.assigned // no worker can take a step any more
			}
		}
		kept := active[:0]
		for _, i := range active {
			if s.canTake(i) {
				kept = append(kept, i)
			}
		}
		active = kept
	}
	return s.assigned
}
