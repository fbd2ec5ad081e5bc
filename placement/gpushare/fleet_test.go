package gpushare

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// firstMax finds the first highest byte, whatever the length and where.
func TestFirstMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		for range 20 {
			b := make([]uint8, n)
			for i := range b {
				if rng.IntN(3) == 0 {
					b[i] = uint8(rng.IntN(102))
				}
			}
			want, best := -1, uint8(0)
			for i, v := range b {
				if v > best {
					want, best = i, v
				}
			}
			if got := firstMax(b); got != want {
				t.Fatalf("firstMax(%v) = %d, want %d", b, got, want)
			}
		}
	}
}

// A fleet makes PlaceOne's decisions: on random clusters, executor after
// executor (shares, whole GPUs, none; fixed sizes and not; constrained to
// a class of workers or not), fgd and frag-fit through a Fleet launch what
// they launch through PlaceOne over the workers as they are, picking the
// same GPUs, and leave the workers alike. The workload is constrained
// too, and frag-fit learns its memory.
func TestFleetMakesPlaceOnesDecisions(t *testing.T) {
	block := scoreBlock
	defer func() { scoreBlock = block }()
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		scoreBlock = []int{block, 1, 2, 3, 5}[seed%5] // and in blocks of a few workers
		_, workers := randomGPUCluster(r)
		for i := range workers {
			workers[i].Tags = map[string]int{}
		}
		class := func(id string) int { return int(id[len(id)-1]-'0') % 3 }
		fitsClass := func(c int) func(string) bool { return func(id string) bool { return class(id) == c } }
		workload := []Shape{
			{TaskShape: placement.TaskShape{Cores: 8000, Resources: map[string]int{GPU: W}, Weight: 5}},
			{TaskShape: placement.TaskShape{Cores: 4000, Resources: map[string]int{GPU: 460}, Weight: 4}},
			{TaskShape: placement.TaskShape{Cores: 4000, Resources: map[string]int{GPU: 460}, Weight: 2}, Constraint: "c1", Fits: fitsClass(1)},
			{TaskShape: placement.TaskShape{Cores: 12000, Resources: map[string]int{GPU: 2 * W}, Weight: 1}, Constraint: "c2", Fits: fitsClass(2)},
			{TaskShape: placement.TaskShape{Cores: 16000, Weight: 1}},
		}
		for _, name := range []string{"fgd", "frag-fit"} {
			exhaustive, _ := placement.New(name, placement.Options{MinCoreUnit: 4000})
			fast, _ := placement.New(name, placement.Options{MinCoreUnit: 4000})
			for _, p := range []placement.Policy{exhaustive, fast} {
				if seed%2 == 0 {
					p.(WorkloadSetter).SetWorkload(workload)
				}
				p.(WorkerMeeter).MeetWorkers(workers)
			}
			fleet, err := NewFleet(fast)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range workers {
				fleet.Add(w)
			}
			ws := clone(workers)
			for step := range 60 {
				apps, _ := randomGPUCluster(r)
				app := apps[0]
				app.MemoryPerExecutorMB = []int{0, 1024, 16384, 40000}[r.IntN(4)]
				constraint := ""
				if c := r.IntN(4); c < 3 && step%2 == 1 {
					app.Fits, constraint = fitsClass(c), fmt.Sprintf("c%d", c)
					if step%10 == 9 {
						constraint = "" // unnamed: decided over every worker
					}
				}
				want, at := placement.PlaceOne(app, ws, exhaustive)
				got, gotAt := fleet.Place(app, constraint)
				if gotAt != at || !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d, %s, step %d, app %+v: fleet launched %+v on %d, PlaceOne %+v on %d", seed, name, step, app, got, gotAt, want, at)
				}
				if at >= 0 {
					if err := applyAll(ws, []placement.App{app}, []placement.Launch{want}); err != nil {
						t.Fatal(err)
					}
					if tag := placement.Tag(app); tag != "" {
						ws[at].Tags[tag]++
					}
				}
				for i := range ws {
					if w := fleet.Worker(i); !reflect.DeepEqual(w, ws[i]) {
						t.Fatalf("seed %d, %s, step %d: fleet's worker %+v, PlaceOne's %+v", seed, name, step, w, ws[i])
					}
				}
			}
		}
	}
}

// A fleet takes fgd and frag-fit only, and a worker once.
func TestFleetTakes(t *testing.T) {
	p, _ := placement.New("gpu-packing", placement.Options{})
	if _, err := NewFleet(p); err == nil {
		t.Error("a fleet for gpu-packing")
	}
	p, _ = placement.New("fgd", placement.Options{})
	f, _ := NewFleet(p)
	w := placement.Worker{ID: "w", CoresFree: 8, MemoryFreeMB: 8, Resources: map[string][]int{GPU: {W}}}
	f.Add(w)
	f.Add(w)
	if f.Len() != 1 {
		t.Errorf("%d workers after adding one twice", f.Len())
	}
	w.Resources[GPU][0] = 0
	if f.Worker(0).Resources[GPU][0] != W {
		t.Error("the fleet shares the caller's slices")
	}
}
