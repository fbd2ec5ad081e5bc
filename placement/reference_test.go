package placement_test

// THE REFERENCE.
//
// This file is a deliberately naive, line-by-line transcription of Spark
// standalone's Master.scheduleExecutorsOnWorkers and startExecutorsOnWorkers
// (core/src/main/scala/org/apache/spark/deploy/master/Master.scala, Spark
// 4.0), generalised in one place only: when the app did not fix its executor
// size, a step hands out min(unit, coresToAssign) cores instead of Spark's 1.
// With unit 1 it is Spark.
//
// It keeps Spark's shape on purpose, including its cost: canLaunchExecutorForApp
// recomputes everything on every call and re-sums assignedExecutors, so one
// app costs O(W²) and more. The package's implementation is checked against
// this, so it must not share code or shortcuts with it. Custom resources are
// Spark's (whole addresses: resourcesAmountFree counts the free addresses;
// resourcesMeetRequirements; acquire takes the first free ones in address
// order); resource profiles (absent from berth) are left out. It assumes sane input:
// non-negative values, unique worker IDs, no overflow.

import (
	"cmp"
	"slices"
	"strings"

	"github.com/berth-cluster/berth/placement"
)

// referenceAssign is Spark's scheduleExecutorsOnWorkers(app, usableWorkers,
// spreadOutApps) with a minimum core unit. It returns the cores assigned to
// each usable worker, index for index.
func referenceAssign(app placement.App, usableWorkers []placement.Worker, spreadOutApps bool, unit int) []int {
	if unit < 1 {
		unit = 1 // Options.MinCoreUnit 0 means Spark's one core
	}
	coresPerExecutor := app.CoresPerExecutor // 0 is Spark's None
	oneExecutorPerWorker := coresPerExecutor == 0
	memoryPerExecutor := app.MemoryPerExecutorMB
	numUsable := len(usableWorkers)
	assignedCores := make([]int, numUsable)     // Number of cores to give to each worker
	assignedExecutors := make([]int, numUsable) // Number of new executors on each worker
	coresFreeSum := 0
	for _, w := range usableWorkers {
		coresFreeSum += w.CoresFree
	}
	coresToAssign := min(app.CoresLeft, coresFreeSum)

	// Spark: val minCoresPerExecutor = coresPerExecutor.getOrElse(1).
	// With a unit the step is recomputed as coresToAssign shrinks.
	minCoresPerExecutor := func() int {
		if coresPerExecutor > 0 {
			return coresPerExecutor
		}
		return min(unit, coresToAssign)
	}

	// Return whether the specified worker can launch an executor for this app.
	canLaunchExecutorForApp := func(pos int) bool {
		step := minCoresPerExecutor()
		keepScheduling := step > 0 && coresToAssign >= step
		enoughCores := usableWorkers[pos].CoresFree-assignedCores[pos] >= step
		assignedExecutorNum := assignedExecutors[pos]

		// If we allow multiple executors per worker, then we can always launch new executors.
		// Otherwise, if there is already an executor on this worker, just give it more cores.
		launchingNewExecutor := !oneExecutorPerWorker || assignedExecutorNum == 0
		if launchingNewExecutor {
			assignedMemory := assignedExecutorNum * memoryPerExecutor
			enoughMemory := usableWorkers[pos].MemoryFreeMB-assignedMemory >= memoryPerExecutor
			assignedExecutorsSum := 0 // Spark: assignedExecutors.sum, every time
			for _, n := range assignedExecutors {
				assignedExecutorsSum += n
			}
			underLimit := assignedExecutorsSum+app.Executors < app.ExecutorLimit
			// assignedResources = resourceReqsPerExecutor * assignedExecutorNum
			enoughResources := true
			for name, amount := range app.ResourcesPerExecutor {
				perExecutor := amount / placement.Whole
				resourcesFree := referenceResourcesAmountFree(usableWorkers[pos], name) - perExecutor*assignedExecutorNum
				if resourcesFree < perExecutor {
					enoughResources = false
				}
			}
			return keepScheduling && enoughCores && enoughMemory && enoughResources && underLimit
		}
		// We're adding cores to an existing executor, so no need
		// to check memory and executor limits
		return keepScheduling && enoughCores
	}

	// Keep launching executors until no more workers can accommodate any
	// more executors, or if we have reached this application's limits
	var freeWorkers []int
	for pos := 0; pos < numUsable; pos++ {
		if canLaunchExecutorForApp(pos) {
			freeWorkers = append(freeWorkers, pos)
		}
	}
	for len(freeWorkers) > 0 {
		for _, pos := range freeWorkers {
			keepScheduling := true
			for keepScheduling && canLaunchExecutorForApp(pos) {
				step := minCoresPerExecutor()
				coresToAssign -= step
				assignedCores[pos] += step

				// If we are launching one executor per worker, then every iteration assigns 1 core
				// to the executor. Otherwise, every iteration assigns cores to a new executor.
				if oneExecutorPerWorker {
					assignedExecutors[pos] = 1
				} else {
					assignedExecutors[pos]++
				}

				// Spreading out an application means spreading out its executors across as
				// many workers as possible. If we are not spreading out, then we should keep
				// scheduling executors on this worker until we use all of its resources.
				// Otherwise, just move on to the next worker.
				if spreadOutApps {
					keepScheduling = false
				}
			}
		}
		var stillFree []int
		for _, pos := range freeWorkers {
			if canLaunchExecutorForApp(pos) {
				stillFree = append(stillFree, pos)
			}
		}
		freeWorkers = stillFree
	}
	return assignedCores
}

// referenceStartExecutorsOnWorkers is Spark's startExecutorsOnWorkers: a FIFO
// round over apps, each offered the workers that can launch one executor for
// it (canLaunchExecutor), sorted by the worker selection policy, assigned by
// referenceAssign and allocated by allocateWorkerResourceToExecutors, which
// takes the resources off the workers before the next app is looked at.
func referenceStartExecutorsOnWorkers(apps []placement.App, workers []placement.Worker, spreadOutApps bool, unit int, order string) []placement.Launch {
	if unit < 1 {
		unit = 1
	}
	_, state := cloneCluster(nil, workers) // Spark's WorkerInfo objects; the caller's stay untouched
	var launches []placement.Launch
	// Right now this is a very simple FIFO scheduler. We keep trying to fit in the first app
	// in the queue, then the second app, etc.
	for _, app := range apps {
		coresPerExecutor := 1 // Spark: resourceDesc.coresPerExecutor.getOrElse(1)
		if app.CoresPerExecutor > 0 {
			coresPerExecutor = app.CoresPerExecutor
		}
		// If the cores left is less than the coresPerExecutor,the cores left will not be allocated
		if app.CoresLeft < coresPerExecutor {
			continue
		}
		// canLaunchExecutor: memory for one executor, cores for its first step
		// (Spark: coresPerExecutor.getOrElse(1); with a unit, min(unit, coresLeft)).
		firstStep := app.CoresPerExecutor
		if firstStep <= 0 {
			firstStep = min(unit, app.CoresLeft)
		}
		var alive []int // indices into state
		for i, w := range state {
			enoughResources := true
			for name, amount := range app.ResourcesPerExecutor {
				if referenceResourcesAmountFree(w, name) < amount/placement.Whole {
					enoughResources = false
				}
			}
			if w.MemoryFreeMB >= app.MemoryPerExecutorMB && w.CoresFree >= firstStep && enoughResources {
				alive = append(alive, i)
			}
		}
		referenceSortIndices(alive, state, order)
		usableWorkers := make([]placement.Worker, len(alive))
		for j, i := range alive {
			usableWorkers[j] = state[i]
		}
		assignedCores := referenceAssign(app, usableWorkers, spreadOutApps, unit)

		// Now that we've decided how many cores to allocate on each worker, let's allocate them
		for pos := range usableWorkers {
			if assignedCores[pos] <= 0 {
				continue
			}
			// allocateWorkerResourceToExecutors: with the executor size fixed, divide the
			// cores evenly with no remainder; otherwise one executor grabs them all.
			numExecutors, coresToAssign := 1, assignedCores[pos]
			if app.CoresPerExecutor > 0 {
				numExecutors, coresToAssign = assignedCores[pos]/app.CoresPerExecutor, app.CoresPerExecutor
			}
			worker := &state[alive[pos]]
			for range numExecutors {
				// worker.acquireResources: the first free addresses, in order.
				var acquired map[string][]int
				for name, amount := range app.ResourcesPerExecutor {
					if acquired == nil {
						acquired = map[string][]int{}
					}
					free := worker.Resources[name]
					for a := 0; a < len(free) && len(acquired[name]) < amount/placement.Whole; a++ {
						if free[a] == placement.Whole {
							acquired[name] = append(acquired[name], a)
							free[a] = 0
						}
					}
				}
				launches = append(launches, placement.Launch{
					AppID: app.ID, WorkerID: worker.ID, Cores: coresToAssign, MemoryMB: app.MemoryPerExecutorMB, Resources: acquired,
				})
				worker.CoresFree -= coresToAssign
				worker.MemoryFreeMB -= app.MemoryPerExecutorMB
			}
		}
	}
	return launches
}

// referenceResourcesAmountFree is Spark's WorkerInfo.resourcesAmountFree for
// one resource: how many of its addresses are free.
func referenceResourcesAmountFree(w placement.Worker, name string) int {
	n := 0
	for _, free := range w.Resources[name] {
		if free == placement.Whole {
			n++
		}
	}
	return n
}

// referenceSortIndices sorts indices into workers by Spark 4.0's
// spark.deploy.workerSelectionPolicy, most preferred first.
//
// Deviation from Spark, by berth's contract: ties are broken by worker ID
// ascending for every order. Spark 4.0 writes CORES_FREE_DESC as
// sortBy(w => (w.coresFree, w.id)).reverse, which breaks ties by ID
// *descending* for the two *_DESC orders.
func referenceSortIndices(idx []int, workers []placement.Worker, order string) {
	var key func(w placement.Worker) int
	desc := false
	switch referenceOrderName(order) {
	case "cores-free-desc":
		key, desc = func(w placement.Worker) int { return w.CoresFree }, true
	case "cores-free-asc":
		key = func(w placement.Worker) int { return w.CoresFree }
	case "memory-free-desc":
		key, desc = func(w placement.Worker) int { return w.MemoryFreeMB }, true
	case "memory-free-asc":
		key = func(w placement.Worker) int { return w.MemoryFreeMB }
	case "worker-id":
		key = func(placement.Worker) int { return 0 }
	default:
		panic("reference: unknown order " + order)
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		c := cmp.Compare(key(workers[a]), key(workers[b]))
		if desc {
			c = -c
		}
		if c != 0 {
			return c
		}
		return strings.Compare(workers[a].ID, workers[b].ID)
	})
}

// referenceOrderName maps an Options.Order spelling (berth's or Spark's
// upper-case one) to berth's name; "" is the default, cores-free-desc.
func referenceOrderName(order string) string {
	switch order {
	case "", "CORES_FREE_DESC":
		return "cores-free-desc"
	case "CORES_FREE_ASC":
		return "cores-free-asc"
	case "MEMORY_FREE_DESC":
		return "memory-free-desc"
	case "MEMORY_FREE_ASC":
		return "memory-free-asc"
	case "WORKER_ID":
		return "worker-id"
	}
	return order
}

// referenceOrder returns a sorted copy of workers (for checking Policy.Order).
func referenceOrder(workers []placement.Worker, order string) []placement.Worker {
	idx := make([]int, len(workers))
	for i := range idx {
		idx[i] = i
	}
	referenceSortIndices(idx, workers, order)
	out := make([]placement.Worker, len(idx))
	for j, i := range idx {
		out[j] = workers[i]
	}
	return out
}
