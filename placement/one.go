package placement

import (
	"sort"
	"strconv"
	"strings"
)

// ResourcePicker is implemented by a policy that chooses which addresses an
// executor takes on the worker it was given (FGD takes the GPU whose use
// fragments the worker least). Without it, or when what it returns does not
// fit, PickResources decides. A type wrapping a Policy must forward it.
type ResourcePicker interface {
	PickResources(app App, w Worker) map[string][]int
}

// pickFor chooses one executor's addresses on w (whose free lists it
// updates): the policy's choice when it makes one that fits, else
// PickResources.
func pickFor(p Policy, app App, w *Worker) map[string][]int {
	if rp, ok := p.(ResourcePicker); ok && asksResources(app) {
		if picked := rp.PickResources(app, *w); validPick(w.Resources, app.ResourcesPerExecutor, picked) {
			for name, addrs := range picked {
				for _, a := range addrs {
					w.Resources[name][a] -= min(app.ResourcesPerExecutor[name], Whole)
				}
			}
			return picked
		}
	}
	picked, _ := PickResources(w.Resources, app.ResourcesPerExecutor)
	return picked
}

// validPick reports whether picked gives exactly what want asks, on
// distinct addresses that have it free.
func validPick(free map[string][]int, want map[string]int, picked map[string][]int) bool {
	for name, amount := range want {
		if amount <= 0 {
			continue
		}
		addrs, n := picked[name], 1
		if amount >= Whole {
			n = wholeAddresses(amount)
		}
		if len(addrs) != n {
			return false
		}
		seen := make(map[int]bool, n)
		for _, a := range addrs {
			if a < 0 || a >= len(free[name]) || seen[a] || free[name][a] < min(amount, Whole) {
				return false
			}
			seen[a] = true
		}
	}
	for name := range picked {
		if want[name] <= 0 {
			return false
		}
	}
	return true
}

// PlaceOne places one executor of app as a round would, without copying
// the cluster: for replays and simulations that place tasks one at a time
// on thousands of workers. The executor has CoresPerExecutor cores, or
// without a fixed size min(unit, CoresLeft). It returns the launch and the
// index in workers of the worker chosen, or -1 when no worker can hold it.
// workers are not modified (their resources neither).
func PlaceOne(app App, workers []Worker, p Policy) (Launch, int) {
	size := firstStep(app, minCoreUnit(p))
	if size <= 0 || executorRoom(app) == 0 {
		return Launch{}, -1
	}
	one := app
	one.CoresLeft, one.ExecutorLimit, one.Executors = size, 1, 0
	if app.CoresPerExecutor == 0 {
		one.CoresPerExecutor = size // one executor of exactly this size
	}
	memory := max(app.MemoryPerExecutorMB, 0)
	usable := make([]Worker, 0, len(workers))
	index := make(map[string]int, len(workers))
	for i, w := range workers {
		if w.CoresFree >= size && w.MemoryFreeMB >= memory && ResourceFit(w.Resources, app.ResourcesPerExecutor) >= 1 && app.takes(w) {
			if _, dup := index[w.ID]; !dup {
				index[w.ID] = i
				usable = append(usable, w)
			}
		}
	}
	if len(usable) == 0 {
		return Launch{}, -1
	}
	p.Order(usable)
	cores := p.Assign(one, usable)
	for j := 0; j < len(cores) && j < len(usable); j++ {
		if cores[j] < size {
			continue
		}
		w := usable[j]
		w.Resources = cloneResources(w.Resources)
		picked := pickFor(p, app, &w)
		return Launch{AppID: app.ID, WorkerID: w.ID, Cores: size, MemoryMB: memory, Resources: picked}, index[w.ID]
	}
	return Launch{}, -1
}

// Tag names the kind of executor app asks for by its custom resources, for
// policies that keep alike executors together (GPU clustering): "" for none,
// else each resource sorted by name as name=N for N whole addresses or
// name=share for a share of one, joined by commas: "gpu=2", "gpu=share".
func Tag(app App) string {
	if !asksResources(app) {
		return ""
	}
	names := make([]string, 0, len(app.ResourcesPerExecutor))
	for name, amount := range app.ResourcesPerExecutor {
		if amount > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		if amount := app.ResourcesPerExecutor[name]; amount < Whole {
			parts[i] = name + "=share"
		} else {
			parts[i] = name + "=" + strconv.Itoa(wholeAddresses(amount))
		}
	}
	return strings.Join(parts, ",")
}
