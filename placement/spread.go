package placement

// stepPolicy is Spark's placement with a minimum core unit: "spread" hands
// one step to every worker in turn (spark.deploy.spreadOut=true), "pack"
// fills each worker before the next (spreadOut=false). It is a StepPolicy:
// the Index walks it by its spec (fastpath.go).
type stepPolicy struct {
	name string
	spec StepSpec    // its order's name normalized, its unit CoreUnit'd
	cmp  compareFunc // the spec's order, worked out once
}

var _ StepPolicy = (*stepPolicy)(nil)

func newSpread(opts Options) (Policy, error) { return newStepPolicy("spread", true, opts) }

func newStepPolicy(name string, spread bool, opts Options) (Policy, error) {
	cmp, err := orderLess(opts.Order)
	if err != nil {
		return nil, err
	}
	spec := StepSpec{WorkerOrder: normalOrder(opts.Order), Unit: CoreUnit(opts.MinCoreUnit), Spread: spread}
	return &stepPolicy{name: name, spec: spec, cmp: cmp}, nil
}

func (p *stepPolicy) Name() string           { return p.name }
func (p *stepPolicy) MinCoreUnit() int       { return p.spec.Unit }
func (p *stepPolicy) Steps() StepSpec        { return p.spec }
func (p *stepPolicy) Order(workers []Worker) { sortWorkers(workers, p.cmp) }

func (p *stepPolicy) Assign(app App, workers []Worker) []int {
	return newSteps(app, workers, p.spec.Unit).run(p.spec.Spread)
}
