package gpushare

import (
	"math/rand/v2"
	"slices"

	"github.com/berth-cluster/berth/placement"
)

// request is one executor's demand as these policies see it.
type request struct {
	cores  int
	memory int
	milli  int // thousandths of a GPU per GPU: below placement.Whole a share of one
	gpus   int // GPUs (1 for a share), 0 for none
}

func requestOf(app placement.App, cores int) request {
	r := request{cores: cores, memory: max(app.MemoryPerExecutorMB, 0)}
	if amount := app.ResourcesPerExecutor[GPU]; amount > 0 {
		if amount < placement.Whole {
			r.milli, r.gpus = amount, 1
		} else {
			r.milli, r.gpus = placement.Whole, (amount+placement.Whole-1)/placement.Whole
		}
	}
	return r
}

// total is the GPU thousandths the request takes.
func (r request) total() int { return r.milli * r.gpus }

// share reports whether the request shares one GPU.
func (r request) share() bool { return r.gpus == 1 && r.milli < placement.Whole }

// gpuLeft sums a worker's free GPU thousandths.
func gpuLeft(free []int) int {
	n := 0
	for _, f := range free {
		n += f
	}
	return n
}

// fullyFree counts a worker's wholly free GPUs.
func fullyFree(free []int) int {
	n := 0
	for _, f := range free {
		if f >= placement.Whole {
			n++
		}
	}
	return n
}

// fits reports whether w can hold one executor of r (cores, memory, GPUs)
// and of the app's other resources.
func fits(app placement.App, r request, w placement.Worker) bool {
	return w.CoresFree >= r.cores && w.MemoryFreeMB >= r.memory && placement.ResourceFit(w.Resources, app.ResourcesPerExecutor) >= 1
}

// scorer scores the usable workers for one executor of app (index for
// index with ws; a worker that cannot hold it is never passed).
type scorer interface {
	scores(app placement.App, r request, ws []placement.Worker, out []int64)
}

// chooser picks the worker (an index into ws, all usable) for one
// executor of app.
type chooser func(app placement.App, r request, ws []placement.Worker) int

// byScore is the chooser of a scorer: the highest score, the first of
// equals.
func byScore(s scorer) chooser {
	var scores []int64
	return func(app placement.App, r request, ws []placement.Worker) int {
		scores = slices.Grow(scores[:0], len(ws))[:len(ws)]
		s.scores(app, r, ws, scores)
		return best(scores)
	}
}

// assignByScore is Assign for a scoring policy: executor by executor, the
// best-scored usable worker takes one (the first of equals), and the policy's
// view of that worker shrinks by it. Without a fixed executor size an app
// gets one executor per worker, of the unit (or what is left), as Spark's
// one-executor-per-worker apps do.
func assignByScore(s scorer, unit int, app placement.App, workers []placement.Worker) []int {
	return assignEach(byScore(s), unit, app, workers)
}

// assignEach is assignByScore with any way of choosing.
func assignEach(choose chooser, unit int, app placement.App, workers []placement.Worker) []int {
	out := make([]int, len(workers))
	left := max(app.CoresLeft, 0)
	room := app.ExecutorLimit - max(app.Executors, 0)
	if app.ExecutorLimit <= 0 {
		room = 0
	}
	state := workers // copied before the first change
	copied := false
	usable := make([]int, 0, len(workers))
	cand := make([]placement.Worker, 0, len(workers))
	for room > 0 && left > 0 {
		size := placement.ExecutorStep(app.CoresPerExecutor, unit, left)
		if left < size {
			break
		}
		r := requestOf(app, size)
		usable, cand = usable[:0], cand[:0]
		for i, w := range state {
			if (app.CoresPerExecutor > 0 || out[i] == 0) && fits(app, r, w) {
				usable = append(usable, i)
				cand = append(cand, w)
			}
		}
		if len(usable) == 0 {
			break
		}
		i := usable[choose(app, r, cand)]
		out[i] += size
		left -= size
		room--
		if room == 0 || left == 0 {
			break
		}
		if !copied {
			state, copied = slices.Clone(workers), true
		}
		take(app, r, &state[i])
	}
	return out
}

// take removes one executor of r from the policy's view of w.
func take(app placement.App, r request, w *placement.Worker) {
	w.CoresFree -= r.cores
	w.MemoryFreeMB -= r.memory
	if w.Resources != nil {
		res := make(map[string][]int, len(w.Resources))
		for name, free := range w.Resources {
			res[name] = slices.Clone(free)
		}
		w.Resources = res
		placement.PickResources(w.Resources, app.ResourcesPerExecutor)
	}
	if tag := placement.Tag(app); tag != "" {
		tags := make(map[string]int, len(w.Tags)+1)
		for k, v := range w.Tags {
			tags[k] = v
		}
		tags[tag]++
		w.Tags = tags
	}
}

// best is the index of the highest score, the first among equals: the
// paper's simulator breaks ties by node name (a fork of the Kubernetes
// scheduler's selectHost, "for reproducibility"), so equals keep one order
// of preference; here the order the workers come in.
func best(scores []int64) int {
	at := 0
	for i, s := range scores {
		if s > scores[at] {
			at = i
		}
	}
	return at
}

// newRand is a policy's random source for its seed.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// base is what every policy here shares: its name, random source and unit.
// The workers keep the order they came in (the scores decide).
type base struct {
	name string
	rng  *rand.Rand
	unit int // placement.CoreUnit of the options' MinCoreUnit
}

func newBase(name string, opts placement.Options) base {
	return base{name: name, rng: newRand(opts.Seed), unit: placement.CoreUnit(opts.MinCoreUnit)}
}

func (b *base) Name() string                { return b.name }
func (b *base) MinCoreUnit() int            { return b.unit }
func (b *base) Order(ws []placement.Worker) {}

// pickShare is what a policy's PickResources gives app on w: for a share of
// one GPU, the GPU choose picks (-1: none fits, nil), whatever else it
// says; for whole GPUs, nil (the lowest free ones).
func pickShare[T any](app placement.App, w placement.Worker, choose func(request, placement.Worker) (int, T)) map[string][]int {
	r := requestOf(app, app.CoresPerExecutor)
	if !r.share() {
		return nil
	}
	if at, _ := choose(r, w); at >= 0 {
		return map[string][]int{GPU: {at}}
	}
	return nil
}
