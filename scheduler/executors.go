package scheduler

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/share"
	"github.com/berth-cluster/berth/wire"
)

// candidate is an app that wants executors this round.
type candidate struct {
	a    *app
	need int       // executors it could start
	one  share.Vec // what one executor takes
	qr   *queueRound
}

// placeExecutors runs the fair-share round (fairshare.go) over the index:
// a round costs in proportion to the apps and what they get, not to the
// cluster's size.
func (r *round) placeExecutors(rnd *shareRound) {
	alive, coresFree, capacity := r.v.Index.Len(), r.v.Index.CoresFree(), r.v.Capacity.Cores
	var cands []candidate
	for _, a := range r.apps {
		if !a.wants() || a.backingOff(r.now) || a.gangHeld() {
			continue
		}
		// What it wants of the cluster, free or not (its queue's demand,
		// what preemption may take back for it), and what it could start
		// now. Never hand out more executor ids than are reserved: an app
		// that could start more executors than it has ids for waits for a
		// larger reservation (one write) rather than get a layout cut
		// short.
		want := executorsWanted(a, alive, capacity)
		need := executorsWanted(a, alive, coresFree)
		if want == 0 || need > 0 && !r.haveIDs(a, need) {
			continue
		}
		qr := rnd.queues[a.Queue]
		if qr == nil {
			continue
		}
		one, cores := rnd.shape(a, capacity)
		demand := one.Scale(float64(want))
		demand[0] = float64(min(want*cores, a.coresLeft(), capacity))
		qr.want = qr.want.Add(demand)
		qr.wanted += want
		cands = append(cands, candidate{a: a, need: want, one: one, qr: qr})
	}
	if len(cands) == 0 {
		return
	}
	rnd.fairShares()
	rank := map[*queueRound]int{}
	for i, qr := range rnd.order() {
		rank[qr] = i
	}
	slices.SortFunc(cands, func(x, y candidate) int {
		return cmp.Or(cmp.Compare(rank[x.qr], rank[y.qr]), cmp.Compare(y.a.Priority, x.a.Priority), cmp.Compare(x.a.order, y.a.order))
	})
	rnd.cands = slices.Clone(cands)
	cands = r.holdForGang(rnd, cands, func(x, y *app) bool {
		qx, qy := rnd.queues[x.Queue], rnd.queues[y.Queue]
		return cmp.Or(cmp.Compare(rank[qx], rank[qy]), cmp.Compare(y.Priority, x.Priority), cmp.Compare(x.order, y.order)) < 0
	})
	// Pass 1: each queue up to what it is owed.
	r.placeRound(rnd, cands, func(cd candidate) (share.Vec, bool) { return cd.qr.left, true })
	// Pass 2: what is left, to whoever still wants it, up to the limits.
	if r.v.Index.CoresFree() > 0 {
		slices.SortStableFunc(cands, func(x, y candidate) int {
			return cmp.Compare(share.DominantShare(x.qr.usage, rnd.capacity)/x.qr.q.Weight, share.DominantShare(y.qr.usage, rnd.capacity)/y.qr.q.Weight)
		})
		r.placeRound(rnd, cands, func(cd candidate) (share.Vec, bool) { return cd.qr.limit.Sub(cd.qr.usage), false })
	}
}

// haveIDs reports whether a has need executor ids left; if not, the plan
// reserves more (need plus a block), unless a write of a is in flight.
func (r *round) haveIDs(a *app, need int) bool {
	if a.ids >= need {
		return true
	}
	if !a.IDsBlocked {
		r.plan.Reservations = append(r.plan.Reservations, Reservation{AppID: a.ID, Need: need})
	}
	return false
}

// placeRound places cands in their order, each app capped by what room
// says its queue may still take (owed: pass 1, whose caps are then
// spent), and launches what the index decides.
func (r *round) placeRound(rnd *shareRound, cands []candidate, room func(candidate) (share.Vec, bool)) {
	alive, coresFree := r.v.Index.Len(), r.v.Index.CoresFree()
	var apps []placement.App
	for _, cd := range cands {
		a := cd.a
		if !a.wants() {
			continue
		}
		need := min(executorsWanted(a, alive, coresFree), max(a.ids, 0))
		left, spend := room(cd)
		unit := slices.Clone(cd.one)
		if a.Cores == 0 {
			unit[0] = 0 // cores capped apart, below
		}
		k := min(need, allowed(left, unit))
		if spend && k < need {
			cd.qr.capped = true
		}
		coresCap := a.coresLeft()
		if a.Cores == 0 && !math.IsInf(left[0], 1) {
			// (An unbounded room, pass 2's without a limit, caps nothing:
			// converted to an int it was negative, and an app of no fixed
			// size was left beside the cores it could have had.)
			coresCap = min(coresCap, int(math.Ceil(math.Max(left[0], 0)-1e-9)))
			if step := a.step(r.cfg.MinCoreUnit); coresCap > 0 && coresCap < step {
				// Rounded up to one step, as a fixed size is to one
				// executor: the cap must not make an executor smaller
				// than the core unit.
				coresCap = step
			}
		}
		if k <= 0 || coresCap <= 0 || (a.gangForming() && k < a.Gang) {
			continue // a gang this pass cannot hold whole takes nothing
		}
		if spend {
			taken := cd.one.Scale(float64(k))
			if a.Cores == 0 {
				taken[0] = float64(coresCap)
			}
			cd.qr.left = cd.qr.left.Sub(taken).Max(share.Zero(len(taken)))
		}
		apps = append(apps, placement.App{
			ID:                   a.ID,
			CoresLeft:            coresCap,
			CoresPerExecutor:     a.Cores,
			MemoryPerExecutorMB:  a.MemoryMB,
			ExecutorLimit:        min(a.ExecutorLimit, a.held+k),
			Executors:            a.held,
			ResourcesPerExecutor: a.Resources,
			Fits:                 r.workersFor(a),
		})
	}
	if len(apps) == 0 {
		return
	}
	launches := r.v.Index.Round(apps)
	gangPorts, dropped := r.wholeGangs(launches)
	r.plan.Launches = slices.Grow(r.plan.Launches, len(launches))
	for i, l := range launches {
		a := r.appByID[l.AppID]
		_, known := r.v.Fleet.Worker(l.WorkerID)
		if a == nil || !known || dropped[i] {
			continue // not launched (the index keeps it taken until the round's end)
		}
		ports, ok := gangPorts[i], true
		if ports == nil && len(a.Ports) > 0 {
			w, _ := r.worker(l.WorkerID)
			ports, ok = r.takePorts(w, a.Ports)
		}
		if !ok {
			// The index does not count ports: one round may have given
			// this worker more executors than it has ports left.
			continue
		}
		if len(l.Resources) > 0 {
			// The addresses taken, for the preemption view; the cores and
			// memory it counts from the launches (preempt_view.go), so
			// that a round keeps no state for every worker it touched.
			w, _ := r.worker(l.WorkerID)
			r.take(w, 0, 0, l.Resources, a.Resources)
		}
		r.plan.Launches = append(r.plan.Launches, Launch{AppID: a.ID, WorkerID: l.WorkerID, Cores: l.Cores, MemoryMB: l.MemoryMB, Resources: l.Resources, Ports: ports})
		a.launched(l.Cores)
		qr := rnd.queues[a.Queue]
		qr.usage = qr.usage.Add(rnd.vec(l.Cores, l.MemoryMB, a.Resources, 1))
		qr.placed++
	}
}

// executorsWanted bounds the executors one placement round could start for
// a: no more than its limit allows, than its cores left or the free cores
// could hold, and (without a fixed executor size) than one per worker. An
// app without maxCores would otherwise "want" billions.
func executorsWanted(a *app, alive, coresFree int) int {
	n := max(a.ExecutorLimit-a.held, 0)
	if per := a.Cores; per > 0 {
		n = min(n, a.coresLeft()/per, coresFree/per)
	} else {
		n = min(n, a.coresLeft(), coresFree, alive)
	}
	return min(n, maxExecutorsPerPass)
}

// maxExecutorsPerPass bounds the executors one app starts in one pass.
const maxExecutorsPerPass = 1 << 16

// workersFor is the placement filter of a's executors: the workers it is
// not excluded from, whose room is not held for another queue (holds.go),
// that have the ports it asks for and labels that satisfy its
// constraints. nil when none applies (the common case costs
// nothing).
func (r *round) workersFor(a *app) func(string) bool {
	ports, constraints := len(a.Ports), a.Constraints
	excluding, held := r.excluding(a.App), r.holdsAgainst(a.Queue)
	if !excluding && !held && ports == 0 && len(constraints) == 0 {
		return nil
	}
	now := r.now
	return func(id string) bool {
		labels, free, ok := r.peek(id)
		return ok && (!excluding || !a.excludes(id, now)) && (!held || !r.heldFrom(id, a.Queue)) && free >= ports && wire.Satisfies(labels, constraints)
	}
}

// peek is worker id's labels and free ports as the round leaves them,
// without keeping the worker among those it took room on.
func (r *round) peek(id string) (labels map[string]string, freePorts int, ok bool) {
	if u, ok := r.used[id]; ok {
		return u.Labels, u.freePorts(), true
	}
	w, ok := r.v.Fleet.Worker(id)
	if !ok {
		return nil, 0, false
	}
	return w.Labels, w.Ports.Free(), true
}

// excluding reports whether a's exclusions apply: it has some, and a
// placeable worker is left that it is not kept off. An app is never kept
// off every worker: with nowhere else to go, its failures count toward
// its restart policy (or --max-executor-retries) instead, as they would
// without exclusions.
func (r *round) excluding(a *App) bool { return Excluding(r.v.Fleet, a, r.now) }

// Excluding reports whether a's exclusions apply on f at now (excluding).
func Excluding(f Fleet, a *App, now time.Time) bool {
	if len(a.Excluded) == 0 {
		return false
	}
	for w := range f.Workers() {
		if w.Placeable() && !a.excludes(w.ID, now) {
			return true
		}
	}
	return false
}

// excludes reports whether a's executors are kept off worker id now.
func (a *App) excludes(id string, now time.Time) bool {
	x, ok := a.Excluded[id]
	return ok && !x.Over(now)
}

// backingOff reports whether a waits out a relaunch backoff.
func (a *App) backingOff(now time.Time) bool { return BackingOff(a.BackoffUntil, now) }

// BackingOff reports whether a relaunch backoff until then is still on.
func BackingOff(until, now time.Time) bool { return !until.IsZero() && now.Before(until) }
