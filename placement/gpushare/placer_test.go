package gpushare

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// overAll hides a policy's NewPlacer: an Index of it places every round
// through placement.StartExecutorsOnWorkers over every worker.
type overAll struct{ p placement.Policy }

func (o overAll) Name() string                                        { return o.p.Name() }
func (o overAll) Order(ws []placement.Worker)                         { o.p.Order(ws) }
func (o overAll) MinCoreUnit() int                                    { return o.p.(placement.UnitPolicy).MinCoreUnit() }
func (o overAll) Assign(a placement.App, ws []placement.Worker) []int { return o.p.Assign(a, ws) }
func (o overAll) PickResources(a placement.App, w placement.Worker) map[string][]int {
	return o.p.(placement.ResourcePicker).PickResources(a, w)
}

// randomGPUWorker is a worker of id with random free capacity.
func randomGPUWorker(r *rand.Rand, id string) placement.Worker {
	gpus := make([]int, []int{0, 1, 2, 4, 8}[r.IntN(5)])
	for g := range gpus {
		gpus[g] = []int{0, 190, 530, W, W, W}[r.IntN(6)]
	}
	w := placement.Worker{ID: id, CoresFree: r.IntN(65) * 1000, MemoryFreeMB: r.IntN(9) * 16384}
	if len(gpus) > 0 || r.IntN(2) == 0 {
		w.Resources = map[string][]int{GPU: gpus}
	}
	if r.IntN(4) == 0 {
		if w.Resources == nil {
			w.Resources = map[string][]int{}
		}
		w.Resources["nic"] = []int{W, 500, W}[:1+r.IntN(3)]
	}
	if r.IntN(3) == 0 {
		w.Tags = map[string]int{[]string{"gpu=share", "gpu=1", "gpu=2"}[r.IntN(3)]: 1 + r.IntN(3)}
	}
	return w
}

// randomGPUApps are apps of random shapes: shares and whole GPUs or none,
// fixed sizes or not, one executor or many, now and then a Fits.
func randomGPUApps(r *rand.Rand, round int) []placement.App {
	apps := make([]placement.App, 1+r.IntN(6))
	for i := range apps {
		cores := []int{1000, 2000, 4000, 8000, 12000, 32000}[r.IntN(6)]
		a := placement.App{ID: fmt.Sprintf("r%d-a%d", round, i), CoresLeft: cores * (1 + r.IntN(6)), CoresPerExecutor: cores,
			MemoryPerExecutorMB: []int{0, 1024, 16384}[r.IntN(3)], ExecutorLimit: placement.Unlimited}
		switch r.IntN(5) {
		case 0:
			a.CoresPerExecutor = 0 // one executor per worker, of the unit
			a.CoresLeft = []int{500, 1000, 3000, 4000, 8000, 9000, 16000}[r.IntN(7)]
		case 1:
			a.ExecutorLimit, a.Executors = 1+r.IntN(3), r.IntN(2)
		case 2:
			a.CoresLeft = cores // one executor
		}
		switch r.IntN(4) {
		case 1:
			a.ResourcesPerExecutor = map[string]int{GPU: []int{110, 250, 460, 810}[r.IntN(4)]}
		case 2, 3:
			a.ResourcesPerExecutor = map[string]int{GPU: []int{1, 1, 2, 4, 8}[r.IntN(5)] * W}
		}
		if r.IntN(6) == 0 {
			if a.ResourcesPerExecutor == nil {
				a.ResourcesPerExecutor = map[string]int{}
			}
			a.ResourcesPerExecutor["nic"] = []int{300, W}[r.IntN(2)]
		}
		switch r.IntN(8) { // a filter (the master's labels, ports, workers failed on)
		case 0: // half the workers
			a.Fits = func(id string) bool { return id[len(id)-1]%2 == 0 }
		case 1: // a few of them (past maxRefused refusals: one pass over all)
			a.Fits = func(id string) bool { return id[len(id)-1] == '3' }
		case 2: // all but a few
			a.Fits = func(id string) bool { return id[len(id)-1] != '7' }
		}
		apps[i] = a
	}
	return apps
}

// An Index of fgd or frag-fit decides through the policy's placer exactly
// as through StartExecutorsOnWorkers over every worker: random histories
// of workers coming, changing and going and of rounds of random apps give
// the same launches round after round, and leave the workers alike. With
// the workload given and learnt, of several units, and with the placer
// forgetting its scores often, and in blocks of a few workers.
func TestPlacerMakesTheRoundsDecisions(t *testing.T) {
	seeds := uint64(120)
	if testing.Short() {
		seeds = 30
	}
	kinds, slack, block := maxKinds, logSlack, scoreBlock
	defer func() { maxKinds, logSlack, scoreBlock = kinds, slack, block }()
	for seed := range seeds {
		r := rand.New(rand.NewPCG(seed, 23))
		maxKinds, logSlack, scoreBlock = kinds, slack, block
		if seed%4 == 3 {
			logSlack = 0 // trim the log all the time
			if seed%8 == 7 {
				maxKinds = 2 // forget the scores all the time
			}
		}
		if seed%2 == 1 {
			scoreBlock = 1 + int(seed/2)%7 // blocks of a few workers
		}
		unit := []int{1, 1000, 4000}[r.IntN(3)]
		var workload []placement.TaskShape
		if seed%3 == 0 {
			workload = []placement.TaskShape{
				{Cores: 8000, Resources: map[string]int{GPU: W}, Weight: 5},
				{Cores: 4000, Resources: map[string]int{GPU: 460}, Weight: 4},
				{Cores: 12000, Resources: map[string]int{GPU: 2 * W}, Weight: 1},
				{Cores: 16000, Weight: 1},
			}
		}
		for _, name := range []string{"fgd", "frag-fit"} {
			opts := placement.Options{MinCoreUnit: unit, Workload: workload}
			fast, _ := placement.New(name, opts)
			slow, _ := placement.New(name, opts)
			if seed%3 == 1 {
				shapes := []Shape{
					{TaskShape: placement.TaskShape{Cores: 4000, Resources: map[string]int{GPU: 250}, Weight: 3}, MemoryMB: 8192},
					{TaskShape: placement.TaskShape{Cores: 8000, Resources: map[string]int{GPU: W}, Weight: 2}, MemoryMB: 32768},
				}
				fast.(WorkloadSetter).SetWorkload(shapes)
				slow.(WorkloadSetter).SetWorkload(shapes)
			}
			if _, ok := fast.(placement.IncrementalPolicy); !ok {
				t.Fatalf("%s is not incremental", name)
			}
			x, ref := placement.NewIndex(fast), placement.NewIndex(overAll{slow})
			ids := 12 + r.IntN(40)
			for step := range 150 {
				id := fmt.Sprintf("w%03d", r.IntN(ids))
				switch op := r.IntN(10); {
				case op < 4:
					w := randomGPUWorker(r, id)
					x.Put(w)
					ref.Put(w)
				case op < 5:
					x.Delete(id)
					ref.Delete(id)
				default:
					apps := randomGPUApps(r, step)
					got, want := x.Round(apps), ref.Round(apps)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d, %s, unit %d, step %d, apps %+v:\nplacer launched %+v\nround launched  %+v", seed, name, unit, step, apps, got, want)
					}
				}
				if gw, rw := x.Workers(), ref.Workers(); !reflect.DeepEqual(gw, rw) {
					t.Fatalf("seed %d, %s, step %d: workers %+v, want %+v", seed, name, step, gw, rw)
				}
			}
		}
	}
}

// Learning the workload, a policy keeps what it measured while the learnt
// shapes stay the same (a stream of one shape): its decisions are those of
// the same policy made to measure everything anew at every decision.
func TestLearningKeepsTheSameMeasure(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 5))
		_, workers := randomGPUCluster(r)
		for _, name := range []string{"fgd", "frag-fit"} {
			kept, _ := placement.New(name, placement.Options{MinCoreUnit: 1000})
			anew, _ := placement.New(name, placement.Options{MinCoreUnit: 1000})
			a, b := clone(workers), clone(workers)
			apps, _ := randomGPUCluster(r)
			for step := range 40 {
				app := apps[0] // the same shape for a while, then others
				if step >= 20 {
					app = apps[r.IntN(len(apps))]
				}
				anew.(interface{ measure() *fragMeasure }).measure().stale()
				gen := kept.(interface{ measure() *fragMeasure }).measure().gen
				la, at := placement.PlaceOne(app, a, kept)
				lb, bt := placement.PlaceOne(app, b, anew)
				if at != bt || !reflect.DeepEqual(la, lb) {
					t.Fatalf("seed %d, %s, step %d: %+v on %d, measured anew %+v on %d", seed, name, step, la, at, lb, bt)
				}
				if step > 1 && step < 20 && kept.(interface{ measure() *fragMeasure }).measure().gen != gen {
					t.Fatalf("seed %d, %s, step %d: the measure changed under a stream of one shape", seed, name, step)
				}
				if at >= 0 {
					if err := applyAll(a, []placement.App{app}, []placement.Launch{la}); err != nil {
						t.Fatal(err)
					}
					if err := applyAll(b, []placement.App{app}, []placement.Launch{lb}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}
