package gpushare

import (
	"maps"
	"slices"
	"strings"

	"github.com/berth-cluster/berth/placement"
)

// placer is fgd's and frag-fit's placement.Placer: a Fleet kept in the
// order of an Index (by worker ID) under workers that come, change and go,
// deciding app after app as placement.StartExecutorsOnWorkers does.
//
// A round asks the policy once per app (Assign), which readies its measure
// for the app (learning the workload's shapes, frag-fit its memory) and
// then places the app's executors one by one, each on the first best
// scored worker as the policy sees the workers: a worker already given
// executors of the app is seen with the GPUs placement.PickResources would
// take (the lowest fitting), not those the policy then picks. The round
// then grants the executors worker by worker in the workers' order, the
// policy picking each executor's GPUs on the worker as it really is. The
// placer does the same with the fleet's scores: the fleet's workers take
// the policy's view while the app is decided, then are restored and take
// the grant.
//
// Workers are kept sorted by ID. One that changes is rescored where it is;
// one that leaves becomes a tombstone that no executor fits; one that
// comes (new) waits until the next decision, which rebuilds the fleet in
// ID order (O(W), as rare as workers joining). Tombstones are swept by a
// rebuild once they are half the fleet.
//
// An app with a Fits is decided on the same scores, Fits asked only of the
// workers a decision would take (filter.go: after 16 refusals, of those
// that would beat the best so far). It does not accept (Accepts;
// the Index then decides the app over every worker) a workload with
// constrained shapes (the measure counts the workers as it meets them, and
// the fleet would meet them earlier than a round does), and an app without
// a fixed executor size whose last executor could be smaller than the unit
// (a round keeps to the workers usable for the first one).
type placer struct {
	f       *Fleet
	pending map[string]placement.Worker // new workers, not yet in the fleet
	dead    []bool                      // per fleet index: deleted
	ndead   int

	// per app, reused
	touched []int
	out     map[int]int
	saved   map[int]placement.Worker
	ws      []*placement.Worker
	cores   []int
}

// maxKinds bounds the kinds of executor whose scores a placer keeps (a
// byte per worker each): past it, it forgets them all and scores anew.
// logSlack bounds the log of changed workers beyond four per worker: past
// it, the kinds far behind are forgotten and the log they all saw dropped.
// (Variables for the tests.)
var maxKinds, logSlack = 512, 4096

func newPlacer(p fleetPolicy) *placer {
	f, _ := NewFleet(p)
	return &placer{f: f, pending: map[string]placement.Worker{}, out: map[int]int{}, saved: map[int]placement.Worker{}}
}

// NewPlacer makes fgd's incremental placer (placement.IncrementalPolicy).
func (p *fgd) NewPlacer() placement.Placer { return newPlacer(p) }

// NewPlacer makes frag-fit's incremental placer (placement.IncrementalPolicy).
func (p *fragFit) NewPlacer() placement.Placer { return newPlacer(p) }

// copyWorker is w with its own resource lists and tags (never nil).
func copyWorker(w placement.Worker) placement.Worker {
	res := w.Resources
	if res != nil {
		res = make(map[string][]int, len(w.Resources))
		for name, free := range w.Resources {
			res[name] = slices.Clone(free)
		}
	}
	w.Resources = res
	w.Tags = maps.Clone(w.Tags)
	if w.Tags == nil {
		w.Tags = map[string]int{}
	}
	return w
}

// sameFree reports whether a and b have the same free capacity.
func sameFree(a, b placement.Worker) bool {
	if a.CoresFree != b.CoresFree || a.MemoryFreeMB != b.MemoryFreeMB || len(a.Resources) != len(b.Resources) {
		return false
	}
	for name, free := range a.Resources {
		other, ok := b.Resources[name]
		if !ok || !slices.Equal(free, other) {
			return false
		}
	}
	return true
}

// Put adds w or replaces the worker with its ID.
func (p *placer) Put(w placement.Worker) {
	f := p.f
	i, ok := f.ids[w.ID]
	if !ok {
		p.pending[w.ID] = copyWorker(w)
		return
	}
	if !p.dead[i] && sameFree(f.workers[i], w) {
		f.workers[i].Tags = maps.Clone(w.Tags)
		if f.workers[i].Tags == nil {
			f.workers[i].Tags = map[string]int{}
		}
		return
	}
	if p.dead[i] {
		p.dead[i] = false
		p.ndead--
	}
	f.workers[i] = copyWorker(w)
	f.nodes[i].known = false
	f.log = append(f.log, int32(i))
}

// Delete removes the worker with the ID: a tombstone no executor fits.
func (p *placer) Delete(id string) {
	delete(p.pending, id)
	f := p.f
	i, ok := f.ids[id]
	if !ok || p.dead[i] {
		return
	}
	p.dead[i] = true
	p.ndead++
	f.workers[i] = placement.Worker{ID: id, CoresFree: -1, MemoryFreeMB: -1, Tags: map[string]int{}}
	f.nodes[i].known = false
	f.log = append(f.log, int32(i))
}

// sync brings the new workers in (and sweeps the tombstones) by rebuilding
// the fleet in ID order, and keeps the log of changed workers and the
// kinds' scores bounded.
func (p *placer) sync() {
	f := p.f
	if len(p.pending) > 0 || (p.ndead > 0 && 2*p.ndead >= len(f.workers)) {
		ws := make([]placement.Worker, 0, len(f.workers)-p.ndead+len(p.pending))
		for i, w := range f.workers {
			if !p.dead[i] {
				ws = append(ws, w)
			}
		}
		for _, w := range p.pending {
			ws = append(ws, w)
		}
		clear(p.pending)
		slices.SortFunc(ws, func(a, b placement.Worker) int { return strings.Compare(a.ID, b.ID) })
		f.workers = ws
		f.ids = make(map[string]int, len(ws))
		f.nodes = make([]fleetNode, len(ws))
		for i, w := range ws {
			f.ids[w.ID] = i
			f.nodes[i] = fleetNode{access: f.m.accessOf(w)}
		}
		p.dead, p.ndead = make([]bool, len(ws)), 0
		f.kinds, f.fits, f.log = map[fleetKey]*fleetKind{}, map[string][]int8{}, f.log[:0]
		return
	}
	if len(f.kinds) > maxKinds {
		f.kinds, f.log = map[fleetKey]*fleetKind{}, f.log[:0]
		return
	}
	if len(f.log) > 4*len(f.workers)+logSlack {
		// Forget the kinds that are far behind (scoring every worker anew
		// costs them less than catching up), and the log the others saw.
		cut := len(f.log)
		for key, k := range f.kinds {
			if len(f.log)-k.seen > 2*len(f.workers) {
				delete(f.kinds, key)
				continue
			}
			cut = min(cut, k.seen)
		}
		f.log = f.log[:copy(f.log, f.log[cut:])]
		for _, k := range f.kinds {
			k.seen -= cut
		}
	}
}

// changed notes that worker i changed (its scores are stale).
func (p *placer) changed(i int) {
	p.f.nodes[i].known = false
	p.f.log = append(p.f.log, int32(i))
}

// Accepts reports whether the placer decides app (the type's comment says
// which it does not).
func (p *placer) Accepts(app placement.App) bool {
	if len(p.f.m.groups) > 0 {
		return false
	}
	room, left := placement.ExecutorRoom(app), app.CoresLeft
	if left <= 0 {
		return true // nothing to place
	}
	// PlaceApp gives every executor the first step's size, while a round
	// steps by ExecutorStep on the cores still left: without a fixed size,
	// the cores after the whole steps are a smaller last step. Decline the
	// app only if its executor room reaches that smaller step.
	size := placement.ExecutorStep(app.CoresPerExecutor, p.f.unit, left)
	whole := left / size
	rest := left - whole*size
	return rest == 0 || room <= whole || placement.ExecutorStep(app.CoresPerExecutor, p.f.unit, rest) == size
}

// PlaceApp places app as one app of placement.StartExecutorsOnWorkers
// over the workers in ID order.
func (p *placer) PlaceApp(app placement.App, launches []placement.Launch) []placement.Launch {
	f := p.f
	room, left := placement.ExecutorRoom(app), app.CoresLeft
	if left <= 0 || room == 0 {
		return launches
	}
	size := placement.ExecutorStep(app.CoresPerExecutor, f.unit, left)
	p.sync()
	one := app
	one.CoresLeft, one.ExecutorLimit, one.Executors, one.CoresPerExecutor = size, 1, 0, size
	one.Fits = nil
	memory := max(app.MemoryPerExecutorMB, 0)
	var fits func(int) bool // app.Fits by fleet index (filter.go)
	if app.Fits != nil {
		fits = func(i int) bool { return app.Fits(f.workers[i].ID) }
	}

	// The round asks the policy only when some worker is usable.
	f.gen = f.m.gen
	k := f.kind(one, "")
	f.update(k, one, "")
	at := k.bestWhere(fits)
	if at < 0 {
		return launches
	}
	f.m.prepare(app) // Assign's, once per app
	if f.m.gen != f.gen {
		f.gen = f.m.gen
		f.update(k, one, "")
		at = k.bestWhere(fits)
	}
	// Assign: executor by executor on the policy's view of the workers.
	touched := p.touched[:0]
	for {
		if _, ok := p.out[at]; !ok {
			touched = append(touched, at)
			p.saved[at] = copyWorker(f.workers[at])
		}
		p.out[at] += size
		left -= size
		room--
		if room == 0 || left < size {
			break
		}
		w := &f.workers[at]
		w.CoresFree -= size
		w.MemoryFreeMB -= memory
		if w.Resources != nil {
			placement.PickResources(w.Resources, app.ResourcesPerExecutor)
		}
		if app.CoresPerExecutor <= 0 {
			w.CoresFree = -1 // one executor per worker
		}
		p.changed(at)
		f.update(k, one, "")
		if at = k.bestWhere(fits); at < 0 {
			break
		}
	}
	// The grant, worker by worker in order, on the workers as they are.
	slices.Sort(touched)
	ws, cores := p.ws[:0], p.cores[:0]
	for _, i := range touched {
		f.workers[i] = p.saved[i]
		ws = append(ws, &f.workers[i])
		cores = append(cores, p.out[i])
	}
	before := len(launches)
	launches = placement.Grant(launches, f.policy, app, ws, cores)
	if tag := placement.Tag(app); tag != "" {
		for _, l := range launches[before:] {
			f.workers[f.ids[l.WorkerID]].Tags[tag]++
		}
	}
	for _, i := range touched {
		p.changed(i)
	}
	clear(p.out)
	clear(p.saved)
	clear(ws)
	p.touched, p.ws, p.cores = touched[:0], ws[:0], cores[:0]
	return launches
}
