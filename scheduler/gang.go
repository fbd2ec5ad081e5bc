package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/berth-cluster/berth/placement"
)

// Gangs (docs/PLACEMENT.md): an app that asks "gang": N has its first N
// executors started together or not at all, as distributed training and
// MPI need every rank. A round that cannot give the gang all N places
// none of it; a gang that has waited --gang-reserve-after has the apps
// behind it in the round's order held back, so that capacity freed is
// kept for it and a stream of small apps cannot starve it. (A member lost
// later is replaced alone, unless the app asks "gangRestart": the master
// then kills the others, and the whole gang is placed again.)

// GangEnd is what the gang-restart rule reads of an app when one of its
// executors has ended.
type GangEnd struct {
	Gang       int  // the app's gang size; 0: it has none
	Restart    bool // it asks "gangRestart"
	Restarting bool // its gang is already being killed to start again
	Ending     bool // the app is being ended, or has ended
	// Killed: the member was killed by a request or by its app's end, not
	// preempted: one the app (or an operator) chose to lose breaks nothing.
	Killed bool
}

// Restarts reports whether the rest of the gang is killed, so that the
// whole gang is placed again: a member gone on its own (or preempted)
// breaks the gang of an app that asks so, once per restart.
func (g GangEnd) Restarts() bool {
	return g.Gang > 0 && g.Restart && !g.Restarting && !g.Ending && !g.Killed
}

// gangHeld reports whether a gets nothing this round for its gang: its
// gang is being restarted (until its last member is gone).
func (a *app) gangHeld() bool {
	if a.clocks.GangRestarting && a.held == 0 {
		a.clocks.GangRestarting = false // the old gang is gone: form it anew
	}
	return a.clocks.GangRestarting
}

// gangReserving reports whether a's forming gang has waited long enough
// that the apps behind it are held back for it; it starts a's wait.
func (r *round) gangReserving(a *app) bool {
	if !a.gangForming() {
		a.clocks.GangWaitingSince = time.Time{}
		return false
	}
	if a.clocks.GangWaitingSince.IsZero() {
		a.clocks.GangWaitingSince = r.now
	}
	return r.now.Sub(a.clocks.GangWaitingSince) >= r.cfg.GangReserveAfter
}

// holdForGang drops from cands (in the round's order) the apps behind
// the first gang that has waited --gang-reserve-after and could fit: they
// get nothing while it waits, so that what frees is left for it, and are
// told why (Plan.GangHolds). The gang need not be a candidate of this
// round (it may be waiting for its executor ids to be written). before is
// the round's order.
func (r *round) holdForGang(rnd *shareRound, cands []candidate, before func(x, y *app) bool) []candidate {
	r.plan.GangHoldsDecided = true
	var gang *app
	for _, a := range r.apps {
		if a.Gang == 0 || !a.wants() || a.clocks.GangRestarting || !r.gangReserving(a) || (gang != nil && !before(a, gang)) {
			continue
		}
		if qr := rnd.queues[a.Queue]; qr != nil && r.gangCouldFit(a, qr) {
			gang = a
		}
	}
	if gang == nil {
		return cands
	}
	kept := cands[:0]
	for _, cd := range cands {
		if cd.a == gang || before(cd.a, gang) {
			kept = append(kept, cd)
			continue
		}
		if r.plan.GangHolds == nil {
			r.plan.GangHolds = map[string]string{}
		}
		r.plan.GangHolds[cd.a.ID] = gang.ID
	}
	return kept
}

// gangCouldFit reports whether a's gang could ever be placed whole: the
// placeable workers, empty, hold its N executors, and its queue's limit
// allows them. A gang that never could must not hold anyone back.
func (r *round) gangCouldFit(a *app, qr *queueRound) bool {
	if qr.limit != nil && float64(a.Gang*a.Cores) > qr.limit[0]+1e-9 {
		return false
	}
	return gangFitsWorkers(r.v.Fleet, r.v.Capacity, &a.AppSpec)
}

// gangFitsWorkers reports whether the placeable workers, empty, could
// hold a gang of s whole.
func gangFitsWorkers(f Fleet, k Capacity, s *AppSpec) bool {
	if s.Cores <= 0 {
		return false // submissions refuse it; a restored record must not divide by it
	}
	if s.Gang*s.Cores > k.Cores {
		return false
	}
	slots := 0
	for w := range f.Workers() { // only while a gang waits long: O(workers)
		if w.Placeable() && satisfies(w, s) {
			n := w.Cores / s.Cores
			if s.MemoryMB > 0 {
				n = min(n, w.MemoryMB/s.MemoryMB)
			}
			if slots += n; slots >= s.Gang {
				return true
			}
		}
	}
	return false
}

// wholeGangs finds, among a round's launches, those of gangs being
// formed: a gang given fewer than its N executors, or whose members'
// ports cannot all be had, is dropped whole (its launches' indexes in
// dropped); the ports of a gang kept are taken here, by launch index.
func (r *round) wholeGangs(launches []placement.Launch) (map[int]map[string]int, map[int]bool) {
	var members map[string][]int
	for i, l := range launches {
		if a := r.appByID[l.AppID]; a != nil && a.gangForming() {
			if members == nil {
				members = map[string][]int{}
			}
			members[l.AppID] = append(members[l.AppID], i)
		}
	}
	if members == nil {
		return nil, nil
	}
	portsOf, dropped := map[int]map[string]int{}, map[int]bool{}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		a, idx := r.appByID[id], members[id]
		whole := len(idx) >= a.Gang
		var taken []int
		for _, i := range idx {
			if !whole {
				break
			}
			w, ok := r.worker(launches[i].WorkerID)
			var ports map[string]int
			if ok {
				ports, ok = r.takePorts(w, a.Ports)
			}
			if !ok {
				whole = false
				break
			}
			portsOf[i], taken = ports, append(taken, i)
		}
		if whole {
			a.clocks.GangWaitingSince = time.Time{}
			continue
		}
		for _, i := range taken {
			w, _ := r.worker(launches[i].WorkerID)
			if w.ports != nil {
				w.ports.Release(portsOf[i])
			}
			delete(portsOf, i)
		}
		for _, i := range idx {
			dropped[i] = true
		}
		r.plan.UnplacedGangs = append(r.plan.UnplacedGangs, UnplacedGang{AppID: id, Gang: a.Gang, Placeable: len(idx)})
	}
	return portsOf, dropped
}

// gangWaiting says why a forming gang waits, or "".
func (v *StatusView) gangWaiting(a *App) string {
	switch {
	case a.GangRestarting:
		return fmt.Sprintf("waiting: its gang is being restarted (%d members still to end)", a.Executors)
	case !(a.Gang > 0 && a.Executors == 0):
		return ""
	}
	if !gangFitsWorkers(v.Fleet, v.Capacity, &a.AppSpec) {
		return fmt.Sprintf("waiting: a gang of %d executors of %d cores starts whole or not at all, and the schedulable workers could not hold all of them even empty: it waits for more workers (nothing is held for it)", a.Gang, a.Cores)
	}
	held := ""
	if !a.GangWaitingSince.IsZero() {
		if wait := v.Now.Sub(a.GangWaitingSince); wait >= v.Config.GangReserveAfter {
			held = "; capacity is held for it as it frees"
		} else {
			held = fmt.Sprintf("; capacity is held for it after %s", (v.Config.GangReserveAfter - wait).Round(time.Second))
		}
	}
	return fmt.Sprintf("waiting: a gang of %d executors of %d cores starts whole or not at all, and the cluster has no room for all of them now%s", a.Gang, a.Cores, held)
}
