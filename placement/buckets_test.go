package placement

import (
	"fmt"
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
