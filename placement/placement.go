// Package placement decides where an application's executors go.
//
// It is pure: no I/O, no clock, no goroutines. StartExecutorsOnWorkers
// places one round of waiting apps (in FIFO order) on the ALIVE workers
// given; the master's scheduler keeps the workers in an Index between rounds
// and places each round through Index.Round.
//
// With a minimum core unit of 1 the "spread" and "pack" policies make exactly
// the decisions of Spark standalone's scheduleExecutorsOnWorkers
// (spreadOutApps true and false). A larger unit stops an application that lost
// executors from getting its cores back as many 1-core executors: no executor
// is ever smaller than min(unit, cores the app still needs).
package placement

import "math"

// Unlimited is the ExecutorLimit (or CoresLeft) of an app without a bound.
const Unlimited = math.MaxInt

// Worker is the free capacity of one ALIVE worker.
type Worker struct {
	ID           string
	CoresFree    int
	MemoryFreeMB int
	// Resources is what is free of each custom resource the worker offers
	// (GPUs...), per address in thousandths of it: Resources["gpu"][i] is
	// Whole when address i is free, less when shares of it are taken. nil
	// when the worker offers none.
	Resources map[string][]int
	// Tags counts the executors running on the worker by Tag, for policies
	// that keep alike executors together; nil when unknown.
	Tags map[string]int
}

// App is the outstanding demand of one waiting application.
type App struct {
	ID                  string
	CoresLeft           int // cores the app may still be granted
	CoresPerExecutor    int // 0: the app did not fix the executor size
	MemoryPerExecutorMB int
	ExecutorLimit       int // executors the app may hold in total; Unlimited for no bound
	Executors           int // executors the app holds now
	// ResourcesPerExecutor is the custom resources each executor needs, in
	// thousandths of an address: a multiple of Whole takes that many whole
	// free addresses, less than Whole a share of one address. nil: none.
	ResourcesPerExecutor map[string]int
	// Fits, if set, says which workers the app may use at all (by id):
	// what the master keeps it off (a worker it failed on, one without
	// enough free ports). nil: every worker.
	Fits func(workerID string) bool
}

// takes reports whether app may use w at all (App.Fits).
func (app App) takes(w Worker) bool { return app.Fits == nil || app.Fits(w.ID) }

// Launch is one executor to start.
type Launch struct {
	AppID, WorkerID string
	Cores, MemoryMB int
	// Resources is the addresses (indexes into Worker.Resources[name]) the
	// executor takes of each resource it asked for; nil when it asked none.
	Resources map[string][]int
}

// Policy is one pluggable placement strategy.
type Policy interface {
	Name() string
	Order(workers []Worker)                 // sorts in place, most preferred first
	Assign(app App, workers []Worker) []int // cores app gets on each worker, index for index
}

// Options configure a policy.
type Options struct {
	Order string // "cores-free-desc" (default when ""), "cores-free-asc",
	//                    "memory-free-desc", "memory-free-asc", "worker-id"
	MinCoreUnit int // cores per step when CoresPerExecutor is 0; 0 or 1 = one core (Spark)
	// Seed seeds a policy's random choices (a random policy's, ties between
	// equal scores): the same seed, the same decisions.
	Seed uint64
	// Workload is what the cluster is expected to run, by kind of executor:
	// fragmentation-aware policies measure free capacity against it. Empty:
	// such a policy learns it from the apps it places.
	Workload []TaskShape
}

// TaskShape is one kind of executor with its share of a workload.
type TaskShape struct {
	Cores     int            // as App.CoresPerExecutor
	Resources map[string]int // as App.ResourcesPerExecutor (thousandths per address)
	Weight    float64        // its share; the weights need not add up to 1
}

// CoreUnit is the step, in cores, of a minimum core unit of n, as every
// policy, the master and the benchmarks take it: n, and one core (Spark's
// step) for 0 or less. It is the one place that says so; ExecutorStep
// (unit.go) is the step of an app's next executor.
func CoreUnit(n int) int { return max(n, 1) }
