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

// bestfit's own walk of the index (index_bestfit.go) makes the decisions
// bestfit makes over every worker, round after round on the same index:
// fixed-size executors over runs of equal free cores, apps without a fixed
// size, units, every order, memory that filters workers out, and memory
// that bounds a worker's slots (where the index hands the app to
// StartExecutorsOnWorkers).
func TestIndexBestFitMatchesItsAssign(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 77))
	fast, launched := 0, 0
	for i := range 2500 {
		workers := bestFitWorkers(r)
		order := pick2(r, append([]string{""}, allOrders...))
		p := mustNew(t, "bestfit", placement.Options{Order: order, MinCoreUnit: pick(r, 0, 1, 2, 3, 4)})
		x := placement.NewIndex(p)
		for _, j := range r.Perm(len(workers)) {
			x.Put(workers[j])
		}
		for round := range 3 {
			apps := bestFitApps(r)
			for _, app := range apps {
				if app.CoresPerExecutor == 0 || !memoryBounds(workers, app) {
					fast++
				}
			}
			want := placement.StartExecutorsOnWorkers(apps, workers, p)
			got := x.Round(apps)
			if !same(got, want) {
				t.Fatalf("case %d round %d %q: index %+v\nwant %+v\nworkers %+v\napps %+v", i, round, order, got, want, workers, apps)
			}
			launched += len(want)
			workers = x.Workers()
		}
	}
	t.Logf("%d apps on the fast path, %d launches", fast, launched)
	if fast < 5000 || launched < 20000 {
		t.Fatalf("only %d apps on the fast path, %d launches: the generator is broken", fast, launched)
	}
}

// bestFitWorkers are up to 40 workers, many with equal free cores, most with
// memory to spare, some short of it.
func bestFitWorkers(r *rand.Rand) []placement.Worker {
	workers := make([]placement.Worker, r.IntN(41))
	for i := range workers {
		cores := pick(r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 24)
		memory := cores*4096 + pick(r, 0, 1024, 8192)
		if r.IntN(8) == 0 {
			memory = pick(r, 0, 512, 1024, 2048)
		}
		workers[i] = placement.Worker{ID: fmt.Sprintf("w%c%d", 'a'+r.IntN(6), i), CoresFree: cores, MemoryFreeMB: memory}
	}
	return workers
}

func bestFitApps(r *rand.Rand) []placement.App {
	apps := make([]placement.App, 1+r.IntN(5))
	for i := range apps {
		apps[i] = placement.App{
			ID:                  fmt.Sprintf("app-%d", i),
			CoresLeft:           pick(r, 1, 2, 3, 4, 5, 7, 8, 10, 13, 16, 24, 40, 100, placement.Unlimited),
			MemoryPerExecutorMB: pick(r, 0, 256, 1024, 2048, 4096),
			ExecutorLimit:       pick(r, placement.Unlimited, placement.Unlimited, 1, 2, 3, 5, 8),
		}
		if r.IntN(2) == 0 {
			apps[i].CoresPerExecutor = pick(r, 1, 2, 3, 4, 5, 8)
		}
	}
	return apps
}

// memoryBounds reports whether some worker's memory holds fewer of app's
// executors than its cores do.
func memoryBounds(workers []placement.Worker, app placement.App) bool {
	for _, w := range workers {
		if app.MemoryPerExecutorMB > 0 && w.CoresFree > 0 && w.MemoryFreeMB/app.MemoryPerExecutorMB < w.CoresFree/app.CoresPerExecutor {
			return true
		}
	}
	return false
}

// One index kept round after round, as the master keeps it: between
// rounds workers join (IDs between the others, so the buckets lay the
// positions out again, and after them all, so they take the next), leave,
// and change; every round
// makes the decisions StartExecutorsOnWorkers makes over the workers as
// they are then, for every policy, order and unit, and the index then
// holds what is left of them.
func TestIndexRoundAfterRoundWithJoinsAndLeaves(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 111))
	launches := 0
	for c := range 60 {
		order := pick2(r, append([]string{""}, allOrders...))
		for _, name := range placement.Names() {
			p := mustNew(t, name, placement.Options{Order: order, MinCoreUnit: pick(r, 0, 1, 2, 4)})
			x := placement.NewIndex(p)
			live := map[string]placement.Worker{}
			randomWorker := func(id string) placement.Worker {
				w := placement.Worker{ID: id, CoresFree: pick(r, 0, 1, 2, 3, 4, 6, 8, 16, 32), MemoryFreeMB: pick(r, 0, 512, 2048, 8192)}
				randomGPUs(r, &w)
				return w
			}
			later := 0 // joins with ever later IDs, as Spark-style IDs are
			for round := range 25 {
				for range r.IntN(12) {
					id := fmt.Sprintf("w%03d", r.IntN(300))
					switch k := r.IntN(8); {
					case k < 2 && len(live) > 0: // one that is there leaves
						for id = range live {
							break
						}
						x.Delete(id)
						delete(live, id)
					case k < 4:
						later++
						id = fmt.Sprintf("x%05d", later)
						fallthrough
					default:
						w := randomWorker(id)
						x.Put(w)
						live[w.ID] = w
					}
				}
				current := make([]placement.Worker, 0, len(live))
				for _, w := range live {
					current = append(current, w)
				}
				slices.SortFunc(current, func(a, b placement.Worker) int { return strings.Compare(a.ID, b.ID) })
				apps, _ := randomCluster(r)
				_, workers := cloneCluster(nil, current)
				want := placement.StartExecutorsOnWorkers(apps, workers, p)
				got := x.Round(apps)
				if !same(got, want) {
					t.Fatalf("case %d round %d %s %q: index round %+v\nwant %+v\nworkers %+v\napps %+v", c, round, name, order, got, want, current, apps)
				}
				launches += len(got)
				left := x.Workers()
				if len(left) != len(live) || x.Len() != len(live) {
					t.Fatalf("case %d round %d %s: index holds %d workers (Len %d), want %d", c, round, name, len(left), x.Len(), len(live))
				}
				for _, w := range left {
					want := live[w.ID]
					for _, l := range got {
						if l.WorkerID == w.ID {
							want.CoresFree -= l.Cores
							want.MemoryFreeMB -= l.MemoryMB
						}
					}
					if w.CoresFree != want.CoresFree || w.MemoryFreeMB != want.MemoryFreeMB {
						t.Fatalf("case %d round %d %s: after the round %s has %d cores %d MB, want %d and %d", c, round, name, w.ID, w.CoresFree, w.MemoryFreeMB, want.CoresFree, want.MemoryFreeMB)
					}
					live[w.ID] = w // with the GPUs the round took
				}
			}
		}
	}
	if launches < 2000 {
		t.Fatalf("only %d launches compared: the generator is broken", launches)
	}
}
