package master

import (
	"math"
	"slices"
	"sort"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// Custom resources (GPUs...) on the master. A worker offers addresses of
// each resource (its record's Resources); an executor or driver placed on
// it is given specific addresses (a wire.ResourceGrants) that are written
// with its placement record, so that a new leader takes them again from
// the log. A worker's use is counted per address in thousandths
// (placement.Whole is one whole address), launches still being committed
// included, as its cores are.

// resourceUse is the thousandths in use of each address of each resource a
// worker offers, index for index with its record's addresses.
type resourceUse map[string][]int

// useResources adds (sign 1) or gives back (sign -1) a process's grants.
// Addresses the worker does not offer are ignored.
func (w *workerInfo) useResources(g wire.ResourceGrants, sign int) {
	for name, grant := range g {
		addrs := w.rec.Resources[name]
		if len(addrs) == 0 {
			continue
		}
		if w.resUsed == nil {
			w.resUsed = resourceUse{}
		}
		used := w.resUsed[name]
		if len(used) != len(addrs) {
			used = slices.Grow(used[:0:0], len(addrs))[:len(addrs)]
			copy(used, w.resUsed[name])
			w.resUsed[name] = used
		}
		for _, a := range grant.Addresses {
			if i := slices.Index(addrs, a); i >= 0 {
				used[i] += sign * grantMilli(grant)
			}
		}
	}
}

// grantMilli is what one address of a grant takes, in thousandths.
func grantMilli(g wire.ResourceGrant) int {
	if g.Share > 0 && g.Share < 1 {
		return max(int(math.Round(g.Share*wire.ResourceUnit)), 1)
	}
	return placement.Whole
}

// resourcesFree is what is free of each resource the worker offers, per
// address in thousandths (placement.Worker.Resources); nil when it offers
// none.
func (w *workerInfo) resourcesFree() map[string][]int {
	if len(w.rec.Resources) == 0 {
		return nil
	}
	free := make(map[string][]int, len(w.rec.Resources))
	for name, addrs := range w.rec.Resources {
		f := make([]int, len(addrs))
		used := w.resUsed[name]
		for i := range f {
			f[i] = placement.Whole
			if i < len(used) {
				f[i] -= used[i]
			}
		}
		free[name] = f
	}
	return free
}

// grantsOf names the addresses placement picked (indexes into the worker's
// offer) for a process asking want (in thousandths).
func (w *workerInfo) grantsOf(picked map[string][]int, want map[string]int) wire.ResourceGrants {
	if len(picked) == 0 {
		return nil
	}
	g := make(wire.ResourceGrants, len(picked))
	for name, idx := range picked {
		var grant wire.ResourceGrant
		for _, i := range idx {
			grant.Addresses = append(grant.Addresses, w.rec.Resources[name][i])
		}
		if amount := want[name]; amount < placement.Whole {
			grant.Share = float64(amount) / wire.ResourceUnit
		}
		g[name] = grant
	}
	return g
}

// resourceStatus lists the worker's resources with their use by the
// committed state (launches being committed are not shown), by name.
func (w *workerInfo) resourceStatus() []wire.ResourceUse {
	if len(w.rec.Resources) == 0 {
		return nil
	}
	committed := &workerInfo{rec: w.rec}
	for _, e := range w.executors {
		if !e.launching {
			committed.useResources(e.resources, 1)
		}
	}
	for _, d := range w.drivers {
		if !d.launching {
			committed.useResources(d.held, 1)
		}
	}
	return committed.resourceUse()
}

// countResources adds w's custom resources to a summary as resourceStatus
// would show them (use by the committed state), without building that
// status: a summary of a large GPU fleet is rebuilt after every change.
func (w *workerInfo) countResources(s *wire.WorkerSummary) {
	if len(w.resNames) == 0 {
		return
	}
	if w.launchingResources() { // use not committed yet is in resUsed: the long way
		s.Resources = wire.AddResourceUses(s.Resources, w.state, w.resourceStatus())
		return
	}
	for _, name := range w.resNames {
		addrs := w.rec.Resources[name]
		free := 0
		if w.state == wire.WorkerAlive {
			used := w.resUsed[name]
			for i := range addrs {
				if i >= len(used) || used[i] == 0 {
					free++
				}
			}
		}
		s.Resources = wire.AddResourceTotal(s.Resources, name, len(addrs), free)
	}
}

// launchingResources reports whether a process being launched on w holds
// custom resources.
func (w *workerInfo) launchingResources() bool {
	if len(w.executors) == 0 && len(w.drivers) == 0 {
		return false
	}
	for _, e := range w.executors {
		if e.launching && len(e.resources) > 0 {
			return true
		}
	}
	for _, d := range w.drivers {
		if d.launching && len(d.held) > 0 {
			return true
		}
	}
	return false
}

// resourceUse lists the resources with w.resUsed.
func (w *workerInfo) resourceUse() []wire.ResourceUse {
	names := make([]string, 0, len(w.rec.Resources))
	for name := range w.rec.Resources {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]wire.ResourceUse, len(names))
	for k, name := range names {
		addrs := w.rec.Resources[name]
		u := wire.ResourceUse{Name: name, Addresses: addrs, Used: make([]float64, len(addrs))}
		used := w.resUsed[name]
		for i := range addrs {
			if i < len(used) {
				u.Used[i] = float64(used[i]) / wire.ResourceUnit
			}
			if u.Used[i] == 0 {
				u.Free++
			}
		}
		out[k] = u
	}
	return out
}

// tag is the executor's kind for placement (placement.Tag of its app).
func (e *executorInfo) tag() string {
	if len(e.app.spec.Resources) == 0 {
		return ""
	}
	return placement.Tag(placement.App{ResourcesPerExecutor: e.app.spec.Resources})
}
