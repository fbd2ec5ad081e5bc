// Package firstfit is an example of a placement policy written outside
// package placement: importing it registers "first-fit", which puts each
// executor on the first worker, by ID, that holds it. A master built with
//
//	import _ "github.com/berth-cluster/berth/examples/firstfit"
//
// in cmd/master accepts --placement first-fit; a benchmark that imports it
// replays it (placebench openb --policy first-fit).
package firstfit

import (
	"slices"
	"strings"

	"github.com/berth-cluster/berth/placement"
)

func init() {
	placement.MustRegister("first-fit", func(placement.Options) (placement.Policy, error) { return firstFit{}, nil })
}

// firstFit implements placement.Policy. It steps by one core (it does not
// implement placement.UnitPolicy); the round gives it only workers with
// memory and custom resources for an executor, and caps whatever it
// assigns to what each worker has free.
type firstFit struct{}

func (firstFit) Name() string { return "first-fit" }

// Order sorts the workers by ID: "first" means the same worker every time.
func (firstFit) Order(workers []placement.Worker) {
	slices.SortFunc(workers, func(a, b placement.Worker) int { return strings.Compare(a.ID, b.ID) })
}

// Assign gives each worker in turn as many executors as fit, until the app
// has what it asked for: CoresPerExecutor-sized ones, or one executor per
// worker with all the cores it has when the app fixed no size.
func (firstFit) Assign(app placement.App, workers []placement.Worker) []int {
	cores := make([]int, len(workers))
	left := app.CoresLeft
	room := app.ExecutorLimit - app.Executors
	for i, w := range workers {
		if left <= 0 || room <= 0 {
			break
		}
		if app.CoresPerExecutor <= 0 {
			cores[i] = min(w.CoresFree, left)
			left -= cores[i]
			room--
			continue
		}
		n := min(w.CoresFree/app.CoresPerExecutor, left/app.CoresPerExecutor, room)
		if app.MemoryPerExecutorMB > 0 {
			n = min(n, w.MemoryFreeMB/app.MemoryPerExecutorMB)
		}
		n = min(n, placement.ResourceFit(w.Resources, app.ResourcesPerExecutor))
		cores[i] = n * app.CoresPerExecutor
		left -= cores[i]
		room -= n
	}
	return cores
}
