package placement

// ExecutorStep is the fewest cores the next executor of an app takes: its
// fixed size (coresPerExecutor) when it has one, else the core unit
// (CoreUnit of minCoreUnit), no more than the cores it still wants
// (coresLeft). Spark's step is the unit 1. It is the one rule for the
// step: the rounds' first step and every later one, the master's waiting
// reasons, its fair-share caps and the shape preemption makes room for.
func ExecutorStep(coresPerExecutor, minCoreUnit, coresLeft int) int {
	if coresPerExecutor > 0 {
		return coresPerExecutor
	}
	return min(CoreUnit(minCoreUnit), coresLeft)
}
