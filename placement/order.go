package placement

import (
	"fmt"
	"slices"
	"strings"
)

// The worker orders of Spark 4.0's spark.deploy.workerSelectionPolicy.
const (
	OrderCoresFreeDesc  = "cores-free-desc"
	OrderCoresFreeAsc   = "cores-free-asc"
	OrderMemoryFreeDesc = "memory-free-desc"
	OrderMemoryFreeAsc  = "memory-free-asc"
	OrderWorkerID       = "worker-id"
)

// Orders lists the known worker orders; the first is the default.
func Orders() []string {
	return []string{OrderCoresFreeDesc, OrderCoresFreeAsc, OrderMemoryFreeDesc, OrderMemoryFreeAsc, OrderWorkerID}
}

// compareFunc orders two workers; negative means a is preferred.
type compareFunc func(a, b Worker) int

// orderLess returns the comparison for the named order. Every order breaks
// ties by worker ID ascending so that each decision is deterministic.
func orderLess(name string) (compareFunc, error) {
	var key func(a, b Worker) int
	// Spark spells the orders CORES_FREE_DESC etc.; accept that spelling too.
	switch strings.ReplaceAll(strings.ToLower(name), "_", "-") {
	case "", OrderCoresFreeDesc:
		key = func(a, b Worker) int { return cmpInt(b.CoresFree, a.CoresFree) }
	case OrderCoresFreeAsc:
		key = func(a, b Worker) int { return cmpInt(a.CoresFree, b.CoresFree) }
	case OrderMemoryFreeDesc:
		key = func(a, b Worker) int { return cmpInt(b.MemoryFreeMB, a.MemoryFreeMB) }
	case OrderMemoryFreeAsc:
		key = func(a, b Worker) int { return cmpInt(a.MemoryFreeMB, b.MemoryFreeMB) }
	case OrderWorkerID:
		key = func(a, b Worker) int { return 0 }
	default:
		return nil, fmt.Errorf("placement: unknown worker order %q (known: %s)", name, strings.Join(Orders(), ", "))
	}
	return func(a, b Worker) int {
		if c := key(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}, nil
}

// sortWorkers sorts workers in place by cmp.
func sortWorkers(workers []Worker, cmp compareFunc) {
	slices.SortFunc(workers, cmp)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
