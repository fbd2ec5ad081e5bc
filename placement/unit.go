package placement

// ExecutorStep is the fewest cores the next executor of an app takes: its
// fixed size (coresPerExecutor) when it has one, else the core unit
// (CoreUnit of minCoreUnit), no more than the cores it still wants
// (coresLeft). Spark's step is the unit 1. It is also the largest step an
// app takes, so coresLeft holds at most ceil(coresLeft/step) of them.
//
// It is the one rule for the step, so that nothing decides with a step the
// rounds would not take: the rounds' first step and every later one
// (firstStep, steps.step, best fit's smallest), the Index's walk and its
// bound on a round's launches (index_steps.go, index.go), gpushare's
// fleet, placer and assignments, and in package scheduler the fair-share
// caps, the needs preemption makes room for and the waiting reasons.
func ExecutorStep(coresPerExecutor, minCoreUnit, coresLeft int) int {
	if coresPerExecutor > 0 {
		return coresPerExecutor
	}
	return min(CoreUnit(minCoreUnit), coresLeft)
}
