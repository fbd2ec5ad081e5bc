package gpushare

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-cluster/berth/placement"
)

// Fleet holds a fixed set of workers for fgd or frag-fit and places
// executors on them one at a time, making exactly the decisions that
// placement.PlaceOne makes over the same workers in the same order (each
// executor on the first worker with the best score, its GPUs picked by the
// policy), without scoring every worker for every decision.
//
// Both policies score a worker by its own free capacity alone: its free
// cores, memory and GPUs and which constrained shapes may use it. So a
// worker's score for one kind of executor (cores, memory, resources, and
// the caller's name for its constraint) stays what it was until that
// worker changes, or the policy's measure does (frag-fit learning the
// workload's memory, say). The fleet keeps, per kind of executor met, each
// worker's score in a byte, and a log of the workers changed since; a
// decision brings its kind's scores up to date (the workers changed since
// that kind was last placed, usually a few) and takes the first highest
// byte. What a score costs is the policy's own memoised measure; a worker's
// own fragmentation is kept until it changes.
//
// A decision thus costs a scan of one byte per worker plus the scores of
// the workers changed since its kind was last placed: about as many as
// there are kinds of executor in use, whatever the number of workers.
type Fleet struct {
	policy  fleetPolicy
	m       *fragMeasure
	unit    int
	workers []placement.Worker
	ids     map[string]int
	nodes   []fleetNode
	kinds   map[fleetKey]*fleetKind
	fits    map[string][]int8 // per constraint name: 0 not asked yet, 1 fits, 2 does not
	log     []int32           // the workers changed, in order
	// stamp marks the workers rescored by the update under way (mark[i]
	// == stamp): a worker changed several times since is rescored once.
	mark  []uint32
	stamp uint32
	gen   uint64 // the measure's generation the cached figures are of
}

// fleetPolicy is what a Fleet needs of fgd and frag-fit.
type fleetPolicy interface {
	placement.Policy
	placement.ResourcePicker
	measure() *fragMeasure
	score(r request, n node, before fragments) int64
}

// fleetNode is what a fleet keeps of one worker beyond the worker itself.
type fleetNode struct {
	access    uint64
	before    fragments // its fragmentation, when known
	known     bool      // before is of the worker as it is, under generation beforeGen
	beforeGen uint64
}

// fleetKey is a kind of executor: apps of one kind get the same scores.
type fleetKey struct {
	cores, memory, gpu int
	other              string // other resources, name=amount sorted
	constraint         string
}

// fleetKind is one kind's scores: score[i] is 0 when worker i cannot
// hold an executor of the kind, else 1 + its score; current up to log[:seen]
// under generation gen. A constrained kind takes its scores from the same
// kind unconstrained (base) where the worker fits the constraint: the
// policies' scores do not depend on the executor's constraint.
type fleetKind struct {
	r     request
	other map[string]int
	base  *fleetKind
	score []uint8
	top   []uint8 // top[b]: the highest of score's block b (scoreBlock)
	redo  []int   // blocks whose top update must find again
	seen  int
	gen   uint64
}

// NewFleet makes a fleet for p, which must be fgd or frag-fit (as
// placement.New made it, with its workload set).
func NewFleet(p placement.Policy) (*Fleet, error) {
	fp, ok := p.(fleetPolicy)
	if !ok {
		return nil, fmt.Errorf("placement policy %q cannot be placed with a fleet (fgd and frag-fit can)", p.Name())
	}
	return &Fleet{policy: fp, m: fp.measure(), unit: placement.CoreUnit(fp.(interface{ MinCoreUnit() int }).MinCoreUnit()),
		ids: map[string]int{}, kinds: map[fleetKey]*fleetKind{}, fits: map[string][]int8{}}, nil
}

// Add puts w last in the fleet's order (a copy of it; a worker whose id is
// already in the fleet is ignored, as PlaceOne ignores repeated ids).
func (f *Fleet) Add(w placement.Worker) {
	if _, dup := f.ids[w.ID]; dup {
		return
	}
	w.Resources = maps.Clone(w.Resources)
	for name, free := range w.Resources {
		w.Resources[name] = slices.Clone(free)
	}
	w.Tags = maps.Clone(w.Tags)
	if w.Tags == nil {
		w.Tags = map[string]int{}
	}
	f.ids[w.ID] = len(f.workers)
	f.workers = append(f.workers, w)
	f.nodes = append(f.nodes, fleetNode{access: f.m.accessOf(w)})
	f.log = append(f.log, int32(len(f.workers)-1))
}

// Len is the number of workers.
func (f *Fleet) Len() int { return len(f.workers) }

// Worker is the i-th worker as it is now (its maps are the fleet's: do not
// modify them).
func (f *Fleet) Worker(i int) placement.Worker { return f.workers[i] }

// Place places one executor of app as placement.PlaceOne would over the
// fleet's workers, and takes it off the worker chosen: the launch and the
// worker's index, or -1 when no worker can hold it. constraint names
// app.Fits: apps with the same name must have the same Fits, and Fits must
// not change for a worker (its answer is kept); "" with a nil Fits. (An
// app with a Fits and no name is placed by PlaceOne over every worker.)
func (f *Fleet) Place(app placement.App, constraint string) (placement.Launch, int) {
	size := placement.ExecutorStep(app.CoresPerExecutor, f.unit, app.CoresLeft)
	if size <= 0 || app.ExecutorLimit <= 0 || app.ExecutorLimit-max(app.Executors, 0) <= 0 {
		return placement.Launch{}, -1
	}
	one := app
	one.CoresLeft, one.ExecutorLimit, one.Executors, one.CoresPerExecutor = size, 1, 0, size
	if app.Fits != nil && constraint == "" {
		// A filter without a name: nothing known of it can be kept, so
		// decide over every worker.
		l, at := placement.PlaceOne(app, f.workers, f.policy)
		if at >= 0 {
			f.take(at, app, l)
		}
		return l, at
	}
	// PlaceOne asks the policy only when some worker can hold the
	// executor: the scores as they stand say whether one can (a score is
	// 0 exactly when the worker cannot), and stay right unless preparing
	// the policy for app changes its measure.
	f.gen = f.m.gen
	k := f.kind(one, constraint)
	f.update(k, one, constraint)
	at := k.best()
	if at < 0 {
		return placement.Launch{}, -1
	}
	f.m.prepare(one)
	if f.m.gen != f.gen {
		f.gen = f.m.gen
		f.update(k, one, constraint)
		at = k.best()
	}
	return f.launch(app, one, at), at
}

// kind is app's kind, made on first use.
func (f *Fleet) kind(one placement.App, constraint string) *fleetKind {
	key := fleetKey{cores: one.CoresPerExecutor, memory: max(one.MemoryPerExecutorMB, 0), gpu: one.ResourcesPerExecutor[GPU], constraint: constraint}
	var other map[string]int
	if len(one.ResourcesPerExecutor) > 0 && (len(one.ResourcesPerExecutor) > 1 || key.gpu == 0) {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(one.ResourcesPerExecutor)) {
			if amount := one.ResourcesPerExecutor[name]; name != GPU && amount > 0 {
				parts = append(parts, name+"="+strconv.Itoa(amount))
				if other == nil {
					other = map[string]int{}
				}
				other[name] = amount
			}
		}
		key.other = strings.Join(parts, ",")
	}
	k, ok := f.kinds[key]
	if !ok {
		k = &fleetKind{r: requestOf(one, one.CoresPerExecutor), other: other, score: make([]uint8, len(f.workers)), gen: f.gen - 1}
		if constraint != "" {
			free := one
			free.Fits = nil
			k.base = f.kind(free, "")
		}
		f.kinds[key] = k
	}
	return k
}

// update brings k's scores up to date: every worker's when the measure
// changed since (or k is new), else those of the workers changed since.
func (f *Fleet) update(k *fleetKind, one placement.App, constraint string) {
	if len(k.score) < len(f.workers) {
		k.score = append(k.score, make([]uint8, len(f.workers)-len(k.score))...)
	}
	if blocks := (len(k.score) + scoreBlock - 1) / scoreBlock; len(k.top) < blocks {
		k.top = append(k.top, make([]uint8, blocks-len(k.top))...)
	}
	score := func(i int) uint8 { return f.scoreOf(k, one, constraint, i) }
	if k.base != nil {
		free := one
		free.Fits = nil
		f.update(k.base, free, "")
		score = func(i int) uint8 {
			if k.base.score[i] == 0 || !f.fitsOf(one, constraint, i) {
				return 0
			}
			return k.base.score[i]
		}
	}
	if k.gen != f.gen || len(f.log)-k.seen >= len(f.workers) {
		for i := range f.workers {
			k.score[i] = score(i)
		}
		for b := range k.top {
			k.top[b] = slices.Max(k.block(b))
		}
	} else {
		if len(f.mark) < len(f.workers) {
			f.mark = append(f.mark, make([]uint32, len(f.workers)-len(f.mark))...)
		}
		if f.stamp++; f.stamp == 0 {
			clear(f.mark)
			f.stamp = 1
		}
		for _, i := range f.log[k.seen:] {
			if f.mark[i] != f.stamp {
				f.mark[i] = f.stamp
				old, now, b := k.score[i], score(int(i)), int(i)/scoreBlock
				k.score[i] = now
				if now > k.top[b] {
					k.top[b] = now
				} else if now < old && old == k.top[b] {
					k.redo = append(k.redo, b)
				}
			}
		}
		for _, b := range k.redo {
			k.top[b] = slices.Max(k.block(b))
		}
		k.redo = k.redo[:0]
	}
	k.gen, k.seen = f.gen, len(f.log)
}

// scoreOf is worker i's byte for k: 0 when it cannot hold one executor of
// the kind (PlaceOne's filter), else 1 + the policy's score.
func (f *Fleet) scoreOf(k *fleetKind, one placement.App, constraint string, i int) uint8 {
	w := &f.workers[i]
	r := k.r
	if w.CoresFree < r.cores || w.MemoryFreeMB < r.memory || !gpuFits(r, w.Resources[GPU]) {
		return 0
	}
	if k.other != nil && placement.ResourceFit(w.Resources, one.ResourcesPerExecutor) < 1 {
		return 0
	}
	if one.Fits != nil && !f.fitsOf(one, constraint, i) {
		return 0
	}
	n := node{cores: w.CoresFree, free: w.Resources[GPU], access: f.nodes[i].access}
	if f.m.memory {
		n.mem = w.MemoryFreeMB
	}
	nd := &f.nodes[i]
	if !nd.known || nd.beforeGen != f.gen {
		nd.before, nd.beforeGen, nd.known = f.m.of(n), f.gen, true
	}
	return uint8(1 + max(f.policy.score(r, n, nd.before), 0))
}

// gpuFits reports whether free GPUs hold one executor of r (ResourceFit's
// rule for the one resource GPU).
func gpuFits(r request, free []int) bool {
	switch {
	case r.gpus == 0:
		return true
	case r.share():
		for _, g := range free {
			if g >= r.milli {
				return true
			}
		}
		return false
	default:
		return fullyFree(free) >= r.gpus
	}
}

// fitsOf is app.Fits of worker i, asked once per constraint name.
func (f *Fleet) fitsOf(app placement.App, constraint string, i int) bool {
	known := f.fits[constraint]
	if len(known) < len(f.workers) {
		known = append(known, make([]int8, len(f.workers)-len(known))...)
		f.fits[constraint] = known
	}
	if known[i] == 0 {
		known[i] = 2
		if app.Fits(f.workers[i].ID) {
			known[i] = 1
		}
	}
	return known[i] == 1
}

// launch starts one executor of app on worker i: the policy picks its
// GPUs (as placement.PlaceOne lets it), and the fleet takes it off.
func (f *Fleet) launch(app, one placement.App, i int) placement.Launch {
	w := &f.workers[i]
	memory := max(app.MemoryPerExecutorMB, 0)
	picked := f.policy.PickResources(app, *w)
	if !validShare(w.Resources, app.ResourcesPerExecutor, picked) {
		picked, _ = placement.PickResources(w.Resources, app.ResourcesPerExecutor)
	} else {
		for name, addrs := range picked {
			for _, a := range addrs {
				w.Resources[name][a] -= min(app.ResourcesPerExecutor[name], placement.Whole)
			}
		}
	}
	w.CoresFree -= one.CoresPerExecutor
	w.MemoryFreeMB -= memory
	f.changed(i, app)
	return placement.Launch{AppID: app.ID, WorkerID: w.ID, Cores: one.CoresPerExecutor, MemoryMB: memory, Resources: picked}
}

// take takes launch l of app off worker i (decided by PlaceOne).
func (f *Fleet) take(i int, app placement.App, l placement.Launch) {
	w := &f.workers[i]
	for name, addrs := range l.Resources {
		for _, a := range addrs {
			w.Resources[name][a] -= min(app.ResourcesPerExecutor[name], placement.Whole)
		}
	}
	w.CoresFree -= l.Cores
	w.MemoryFreeMB -= l.MemoryMB
	f.changed(i, app)
}

// changed records that worker i took an executor of app.
func (f *Fleet) changed(i int, app placement.App) {
	if tag := placement.Tag(app); tag != "" {
		f.workers[i].Tags[tag]++
	}
	f.nodes[i].known = false
	f.log = append(f.log, int32(i))
}
