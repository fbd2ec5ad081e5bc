package placement

// newPack is Spark's spreadOut=false: each worker in order takes steps until
// it cannot, then the next. It packs an app onto few workers.
func newPack(opts Options) (Policy, error) { return newStepPolicy("pack", false, opts) }
