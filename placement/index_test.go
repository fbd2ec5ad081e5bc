package placement_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// An Index built and changed a worker at a time (puts in any order,
// replacements, deletions) makes the decisions StartExecutorsOnWorkers
// makes over the same workers, for every policy, unit and order, and
// afterwards holds those workers less what was launched.
func TestIndexRoundMatchesStartExecutorsOnWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 55))
	checked := 0
	for i := range 1500 {
		apps, workers := randomCluster(r)
		if len(workers) == 0 {
			continue
		}
		order := pick2(r, append([]string{""}, allOrders...))
		for _, name := range placement.Names() {
			p := mustNew(t, name, placement.Options{Order: order, MinCoreUnit: pick(r, 0, 1, 2, 4)})
			x := placement.NewIndex(p)
			live := map[string]placement.Worker{}
			for _, j := range r.Perm(len(workers)) {
				w := workers[j]
				if r.IntN(4) == 0 { // first put with other figures, then replaced
					stale := w
					stale.CoresFree, stale.MemoryFreeMB = r.IntN(40), r.IntN(9000)
					x.Put(stale)
				}
				x.Put(w)
				live[w.ID] = w
			}
			for id := range live {
				if r.IntN(5) == 0 {
					x.Delete(id)
					delete(live, id)
				}
			}
			var current []placement.Worker
			for _, w := range workers { // the first of a repeated ID, as the round takes it
				if lw, ok := live[w.ID]; ok && !slices.ContainsFunc(current, func(c placement.Worker) bool { return c.ID == w.ID }) {
					current = append(current, lw)
				}
			}
			want := placement.StartExecutorsOnWorkers(apps, current, p)
			_, cur := cloneCluster(nil, current)
			got := x.Round(apps)
			if !same(got, want) { // the same executors in the same order
				t.Fatalf("case %d %s %q: index round %+v\nwant %+v\nworkers %+v\napps %+v", i, name, order, got, want, current, apps)
			}
			if x.Len() != len(cur) {
				t.Fatalf("case %d %s: index holds %d workers, want %d", i, name, x.Len(), len(cur))
			}
			for _, w := range cur {
				for _, l := range want {
					if l.WorkerID == w.ID {
						w.CoresFree -= l.Cores
						w.MemoryFreeMB -= l.MemoryMB
					}
				}
				if got, ok := x.Worker(w.ID); !ok || got.CoresFree != w.CoresFree || got.MemoryFreeMB != w.MemoryFreeMB {
					t.Fatalf("case %d %s: after the round worker %s is %+v, want %d cores %d MB", i, name, w.ID, got, w.CoresFree, w.MemoryFreeMB)
				}
			}
			checked += len(want)
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d launches compared: the generator is broken", checked)
	}
}

// The index keeps its order through many single updates, and walks it.
func TestIndexKeepsOrderThroughUpdates(t *testing.T) {
	p := mustNew(t, "spread", placement.Options{Order: placement.OrderCoresFreeAsc})
	x := placement.NewIndex(p)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 3000 // several chunks
	for i := range n {
		x.Put(placement.Worker{ID: fmt.Sprintf("w%05d", i), CoresFree: r.IntN(64), MemoryFreeMB: 1 << 16})
	}
	for range 5000 {
		id := fmt.Sprintf("w%05d", r.IntN(n))
		if r.IntN(3) == 0 {
			x.Delete(id)
		} else {
			x.Put(placement.Worker{ID: id, CoresFree: r.IntN(64), MemoryFreeMB: 1 << 16})
		}
	}
	ws := x.Workers()
	if len(ws) != x.Len() {
		t.Fatalf("Workers() has %d, Len() %d", len(ws), x.Len())
	}
	sum := 0
	for i, w := range ws {
		sum += w.CoresFree
		if i > 0 && (ws[i-1].CoresFree > w.CoresFree || (ws[i-1].CoresFree == w.CoresFree && strings.Compare(ws[i-1].ID, w.ID) >= 0)) {
			t.Fatalf("out of order at %d: %+v then %+v", i, ws[i-1], w)
		}
	}
	if sum != x.CoresFree() {
		t.Errorf("CoresFree() = %d, the workers hold %d", x.CoresFree(), sum)
	}
}
