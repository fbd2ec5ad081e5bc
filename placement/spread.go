package placement

// stepPolicy is Spark's placement with a minimum core unit: "spread" hands
// one step to every worker in turn (spark.deploy.spreadOut=true), "pack"
// fills each worker before the next (spreadOut=false).
type stepPolicy struct {
	name   string
	spread bool
	unit   int
	cmp    compareFunc
	kind   orderKind
}

func newSpread(opts Options) (Policy, error) { return newStepPolicy("spread", true, opts) }

func newStepPolicy(name string, spread bool, opts Options) (Policy, error) {
	cmp, err := orderLess(opts.Order)
	if err != nil {
		return nil, err
	}
	return &stepPolicy{name: name, spread: spread, unit: CoreUnit(opts.MinCoreUnit), cmp: cmp, kind: kindOf(opts.Order)}, nil
}

func (p *stepPolicy) Name() string           { return p.name }
func (p *stepPolicy) MinCoreUnit() int       { return p.unit }
func (p *stepPolicy) Order(workers []Worker) { sortWorkers(workers, p.cmp) }

func (p *stepPolicy) Assign(app App, workers []Worker) []int {
	return newSteps(app, workers, p.unit).run(p.spread)
}
