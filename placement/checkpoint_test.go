package placement_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// A checkpoint rolled back leaves the index as it was: whatever rounds,
// puts and deletes ran under it, the index holds the same workers with the
// same free room, in the same order, and its next round decides what a
// round on an index never touched decides. Every built-in policy (the
// step and fit paths); gpushare's tests try its incremental placer.
func TestIndexRollbackUndoesEveryChange(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 77))
	policies := placement.Names()
	changed := 0
	for i := range 600 {
		apps, workers := randomCluster(r)
		if len(workers) == 0 {
			continue
		}
		for _, name := range policies {
			p := mustNew(t, name, placement.Options{MinCoreUnit: pick(r, 0, 1, 4)})
			x, untouched := placement.NewIndex(p), placement.NewIndex(p)
			for _, w := range workers {
				x.Put(w)
				untouched.Put(w)
			}
			x.Rollback() // without a checkpoint: nothing
			before, cores := x.Workers(), x.CoresFree()
			x.Checkpoint()
			first := x.Round(apps)
			for _, w := range workers {
				switch r.IntN(6) {
				case 0:
					x.Delete(w.ID)
				case 1:
					w.CoresFree /= 2
					x.Put(w)
				case 2:
					x.Delete(w.ID)
					x.Put(w)
				}
			}
			x.Put(placement.Worker{ID: fmt.Sprintf("new-%d", i), CoresFree: 8, MemoryFreeMB: 8192})
			x.Round(apps)
			if len(first) > 0 {
				changed++
			}
			x.Rollback()
			if got := x.Workers(); !reflect.DeepEqual(got, before) || x.CoresFree() != cores {
				t.Fatalf("case %d %s: after rollback the index holds\n%+v (%d cores free)\nwant %+v (%d)", i, name, got, x.CoresFree(), before, cores)
			}
			if name == "random" {
				continue // its draws differ from round to round by design
			}
			if got, want := x.Round(apps), untouched.Round(apps); !same(got, want) {
				t.Fatalf("case %d %s: the round after a rollback decided\n%+v\nwant %+v", i, name, got, want)
			}
		}
	}
	if changed == 0 {
		t.Fatal("no round under a checkpoint launched anything: the rollback was never tried")
	}
}
