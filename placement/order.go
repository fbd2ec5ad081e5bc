package placement

import (
	"cmp"
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

// orderKind is an order as the Index walks it: by which quantity.
type orderKind int

const (
	byCoresDesc orderKind = iota
	byCoresAsc
	byMemoryDesc
	byMemoryAsc
	byID
)

// kindOf is the kind of a valid order's name (the default's for another).
func kindOf(name string) orderKind {
	k, _ := parseOrder(name)
	return k
}

// parseOrder is the kind of an order's name, and whether it is one of
// Orders(): what the Index checks of a fast path's spec (fastpath.go),
// without allocating, as it may on every StartExecutorsOnWorkers.
func parseOrder(name string) (orderKind, bool) {
	switch normalOrder(name) {
	case OrderCoresFreeDesc:
		return byCoresDesc, true
	case OrderCoresFreeAsc:
		return byCoresAsc, true
	case OrderMemoryFreeDesc:
		return byMemoryDesc, true
	case OrderMemoryFreeAsc:
		return byMemoryAsc, true
	case OrderWorkerID:
		return byID, true
	}
	return byCoresDesc, false
}

// normalOrder is berth's spelling of an order name (Spark spells them
// CORES_FREE_DESC etc.); "" is the default.
func normalOrder(name string) string {
	if name = strings.ReplaceAll(strings.ToLower(name), "_", "-"); name == "" {
		return OrderCoresFreeDesc
	}
	return name
}

// orderLess returns the comparison for the named order. Every order breaks
// ties by worker ID ascending so that each decision is deterministic.
func orderLess(name string) (compareFunc, error) {
	if !slices.Contains(Orders(), normalOrder(name)) {
		return nil, fmt.Errorf("placement: %w %q (known: %s)", ErrUnknownOrder, name, strings.Join(Orders(), ", "))
	}
	return kindOf(name).compare, nil
}

// value is the order before its tie on the worker ID, as one integer:
// lower first. A descending order is the complement (^x, -x-1: no
// overflow at the smallest int).
func (k orderKind) value(w *Worker) int64 {
	switch k {
	case byCoresDesc:
		return ^int64(w.CoresFree)
	case byCoresAsc:
		return int64(w.CoresFree)
	case byMemoryDesc:
		return ^int64(w.MemoryFreeMB)
	case byMemoryAsc:
		return int64(w.MemoryFreeMB)
	}
	return 0
}

// compareSlots is the order over indexed workers, ties broken by rank (by
// worker ID ascending).
func (k orderKind) compareSlots(a, b *slot) int {
	return cmp.Or(cmp.Compare(k.value(&a.w), k.value(&b.w)), cmp.Compare(a.rank, b.rank))
}

// compare is the order, ties broken by worker ID ascending.
func (k orderKind) compare(a, b Worker) int {
	if c := cmp.Compare(k.value(&a), k.value(&b)); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
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
