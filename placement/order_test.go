package placement_test

// Policy.Order: the five orders of Spark 4.0's
// spark.deploy.workerSelectionPolicy, ties broken by worker ID ascending,
// under berth's names and Spark's upper-case ones; and New's errors.

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// orderWorkers has ties on cores and on memory; the slice order is neither
// the ID order nor any of the expected orders.
var orderWorkers = []placement.Worker{
	{ID: "d", CoresFree: 8, MemoryFreeMB: 200},
	{ID: "a", CoresFree: 4, MemoryFreeMB: 100},
	{ID: "e", CoresFree: 2, MemoryFreeMB: 300},
	{ID: "c", CoresFree: 4, MemoryFreeMB: 300},
	{ID: "b", CoresFree: 8, MemoryFreeMB: 100},
}

var orderWant = map[string]string{
	"cores-free-desc":  "bdace", // 8: b,d  4: a,c  2: e
	"cores-free-asc":   "eacbd", // 2: e  4: a,c  8: b,d
	"memory-free-desc": "cedab", // 300: c,e  200: d  100: a,b
	"memory-free-asc":  "abdce", // 100: a,b  200: d  300: c,e
	"worker-id":        "abcde",
}

func idsOf(ws []placement.Worker) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.ID)
	}
	return b.String()
}

func TestOrder(t *testing.T) {
	spellings := map[string][]string{
		"cores-free-desc":  {"cores-free-desc", "CORES_FREE_DESC", ""},
		"cores-free-asc":   {"cores-free-asc", "CORES_FREE_ASC"},
		"memory-free-desc": {"memory-free-desc", "MEMORY_FREE_DESC"},
		"memory-free-asc":  {"memory-free-asc", "MEMORY_FREE_ASC"},
		"worker-id":        {"worker-id", "WORKER_ID"},
	}
	for order, names := range spellings {
		for _, spelling := range names {
			for _, policy := range placement.Names() {
				p := mustNew(t, policy, placement.Options{Order: spelling})
				ws := slices.Clone(orderWorkers)
				p.Order(ws)
				if got := idsOf(ws); got != orderWant[order] {
					t.Errorf("%s, Order %q: %s, want %s", policy, spelling, got, orderWant[order])
				}
				if got := idsOf(referenceOrder(orderWorkers, spelling)); got != orderWant[order] {
					t.Errorf("reference, Order %q: %s, want %s", spelling, got, orderWant[order])
				}
			}
		}
	}
}

// TestOrderMatchesReference: on random workers (many ties, some IDs sharing
// a prefix) every policy's Order is a permutation sorted like the reference.
func TestOrderMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	policies := map[string]placement.Policy{}
	for _, name := range placement.Names() {
		for _, order := range allOrders {
			policies[name+"/"+order] = mustNew(t, name, placement.Options{Order: order})
		}
	}
	for i := 0; i < 300; i++ {
		_, workers := randomCluster(r)
		for key, p := range policies {
			order := key[strings.IndexByte(key, '/')+1:]
			ws := slices.Clone(workers)
			p.Order(ws)
			if want := referenceOrder(workers, order); !same(ws, want) {
				t.Fatalf("%s: Order(%+v)\n= %+v\nwant %+v", key, workers, ws, want)
			}
		}
	}
}

// TestOrderUsedByRound: the round offers workers in the policy's order. Pack
// puts a one-executor app on the first worker of the order.
func TestOrderUsedByRound(t *testing.T) {
	app := unlimitedApp("app", 2, 0, 50)
	for order, want := range orderWant {
		p := mustNew(t, "pack", placement.Options{Order: order})
		got := placement.StartExecutorsOnWorkers([]placement.App{app}, orderWorkers, p)
		if len(got) != 1 || got[0].WorkerID != want[:1] {
			t.Errorf("pack, %s: %+v, want the app on %s", order, got, want[:1])
		}
	}
}

func TestNew(t *testing.T) {
	names := placement.Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names() = %v, not sorted", names)
	}
	for _, want := range []string{"bestfit", "pack", "spread"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names() = %v, missing %q", names, want)
		}
	}
	for _, name := range names {
		for _, order := range append([]string{"", "CORES_FREE_ASC", "WORKER_ID"}, allOrders...) {
			for _, unit := range []int{0, 1, 2, 4, 64} {
				p := mustNew(t, name, placement.Options{Order: order, MinCoreUnit: unit})
				if p.Name() != name {
					t.Errorf("New(%q).Name() = %q", name, p.Name())
				}
			}
		}
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct {
		name string
		opts placement.Options
	}{
		{"", placement.Options{}},
		{"random", placement.Options{}},
		{"spread", placement.Options{Order: "cores-free"}},
		{"pack", placement.Options{Order: "fastest"}},
		{"bestfit", placement.Options{Order: "worker_id_desc"}},
		{"spread", placement.Options{MinCoreUnit: -1}},
		{"pack", placement.Options{MinCoreUnit: -4}},
		{"bestfit", placement.Options{MinCoreUnit: -1}},
	}
	for _, tc := range cases {
		p, err := placement.New(tc.name, tc.opts)
		if err == nil {
			t.Errorf("New(%q, %+v) = %v, want an error", tc.name, tc.opts, p)
		} else if err.Error() == "" {
			t.Errorf("New(%q, %+v): empty error message", tc.name, tc.opts)
		}
	}
}
