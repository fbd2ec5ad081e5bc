package placement

import (
	"fmt"
	"reflect"
	"testing"
)

// Workers that come and go with ever later IDs take the next position
// each (no layout of the others), and the positions of those that left
// are reclaimed by a layout once they are half: the bitmaps do not grow
// for ever in a long-lived master.
func TestBucketsReclaimTheLeftPositions(t *testing.T) {
	p, err := New("spread", Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(p)
	const steady = 20
	for i := range steady {
		x.Put(Worker{ID: fmt.Sprintf("a%02d", i), CoresFree: 4, MemoryFreeMB: 100})
	}
	app := []App{{ID: "one", CoresLeft: 1, ExecutorLimit: Unlimited}}
	layouts, maxAt := 0, 0 // layouts asked for by a join
	for i := range 5000 {
		id := fmt.Sprintf("b%06d", i)
		before := x.byCores.stale // the holes may have asked for one
		x.Put(Worker{ID: id, CoresFree: 8, MemoryFreeMB: 100})
		if x.byCores.stale && !before {
			layouts++
		}
		got := x.Round(app) // the new worker has the most cores free: it takes the executor
		if len(got) != 1 || got[0].WorkerID != id {
			t.Fatalf("join %d: launches %+v, want one on %s", i, got, id)
		}
		x.Delete(id)
		maxAt = max(maxAt, len(x.byCores.at))
	}
	if maxAt > 2*(steady+1)+1 {
		t.Fatalf("the layout grew to %d positions for %d workers", maxAt, steady+1)
	}
	if layouts != 0 {
		t.Fatalf("%d joins after every other ID laid every worker out again", layouts)
	}
}

// Workers that join together, put in any order, take the next positions
// in ID order; one that leaves and comes back under its ID takes its own
// position again: neither lays every worker out again.
func TestBucketsJoinsAndReturnsWithoutALayout(t *testing.T) {
	p, err := New("spread", Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(p)
	for i := range 100 {
		x.Put(Worker{ID: fmt.Sprintf("a%03d", i), CoresFree: 2, MemoryFreeMB: 100})
	}
	x.Round(nil) // the first layout
	for batch := range 20 {
		for _, i := range []int{3, 0, 2, 1} { // a map's order
			x.Put(Worker{ID: fmt.Sprintf("b%03d-%d", batch, i), CoresFree: 1 + i, MemoryFreeMB: 100})
		}
		x.Delete(fmt.Sprintf("a%03d", batch))                                              // unhealthy, say
		x.Put(Worker{ID: fmt.Sprintf("a%03d", 99-batch), CoresFree: 3, MemoryFreeMB: 100}) // changed
		if x.byCores.stale {
			t.Fatalf("batch %d: the layout went stale", batch)
		}
		x.Round(nil)
		x.Put(Worker{ID: fmt.Sprintf("a%03d", batch), CoresFree: 5, MemoryFreeMB: 100}) // healthy again
		if x.byCores.stale || len(x.byCores.pending) != 0 {
			t.Fatalf("batch %d: a worker back under its ID waits for a layout", batch)
		}
		got, want := x.Workers(), x.Workers()
		p.Order(want)
		for i := range got {
			if got[i].ID != want[i].ID {
				t.Fatalf("batch %d: the index's order %v, the policy's %v", batch, ids(got), ids(want))
			}
		}
	}
}

// A cluster whose workers count more kinds of free cores than the buckets
// keep (millicores, say) moves to the sorted store, and its rounds make
// the same decisions before and after.
func TestBucketsOverflowToTheSortedStore(t *testing.T) {
	p, err := New("spread", Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(p)
	var workers []Worker
	for i := range maxBuckets + 50 {
		w := Worker{ID: fmt.Sprintf("w%04d", i), CoresFree: 1000 + 7*i, MemoryFreeMB: 1 << 20}
		workers = append(workers, w)
		x.Put(w)
		if i == maxBuckets/2 {
			x.Round(nil) // laid out in buckets
			if x.byCores == nil {
				t.Fatal("the buckets gave up early")
			}
		}
	}
	apps := []App{{ID: "a", CoresLeft: 5000, CoresPerExecutor: 3, ExecutorLimit: Unlimited, MemoryPerExecutorMB: 10}}
	want := StartExecutorsOnWorkers(apps, workers, p)
	got := x.Round(apps)
	if x.byCores != nil {
		t.Fatalf("%d kinds of free cores, still in buckets", len(workers))
	}
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("launches %+v\nwant %+v", got, want)
	}
}
