// Package placement decides where an application's executors go.
//
// It is pure: no I/O, no clock, no goroutines. The master calls
// StartExecutorsOnWorkers once per scheduling round with the waiting apps (in
// FIFO order) and the ALIVE workers, and launches what it returns.
//
// With a minimum core unit of 1 the "spread" and "pack" policies make exactly
// the decisions of Spark standalone's scheduleExecutorsOnWorkers
// (spreadOutApps true and false). A larger unit stops an application that lost
// executors from getting its cores back as many 1-core executors: no executor
// is ever smaller than min(unit, cores the app still needs).
package placement

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

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
}

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
}

// registry maps a policy name to its constructor. A new policy is one file
// with its constructor plus one line here.
var registry = map[string]func(Options) (Policy, error){
	"spread":  newSpread,
	"pack":    newPack,
	"bestfit": newBestFit,
}

// New returns the policy called name configured by opts.
func New(name string, opts Options) (Policy, error) {
	ctor, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("placement: unknown policy %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if opts.MinCoreUnit < 0 {
		return nil, fmt.Errorf("placement: minimum core unit %d is negative", opts.MinCoreUnit)
	}
	if _, err := orderLess(opts.Order); err != nil {
		return nil, err
	}
	return ctor(opts)
}

// Names lists the registered policies, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// unit is the effective minimum core unit of opts.
func (o Options) unit() int {
	if o.MinCoreUnit < 1 {
		return 1
	}
	return o.MinCoreUnit
}
