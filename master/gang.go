package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// Gangs (docs/PLACEMENT.md): an app that asks "gang": N has its first N
// executors started together or not at all, as distributed training and
// MPI need every rank. A round that cannot give the gang all N places
// none of it; a gang that has waited --gang-reserve-after has the apps
// behind it in the round's order held back, so that capacity freed is
// kept for it and a stream of small apps cannot starve it. A member lost
// later is replaced alone, unless the app asks "gangRestart": then the
// others are killed and the whole gang placed again.

// gangForming reports whether a's gang has yet to be placed (again): it
// asks a gang and runs no executor.
func (a *appInfo) gangForming() bool { return a.rec.Desc.Gang > 0 && len(a.executors) == 0 }

// gangHeld reports whether a gets nothing this round for its gang: its
// gang is being restarted (until its last member is gone).
func (a *appInfo) gangHeld() bool {
	if a.gangRestarting && len(a.executors) == 0 {
		a.gangRestarting = false // the old gang is gone: form it anew
	}
	return a.gangRestarting
}

// gangReserving reports whether a's forming gang has waited long enough
// that the apps behind it are held back for it; it starts a's wait.
func (c *core) gangReserving(a *appInfo) bool {
	if !a.gangForming() {
		a.gangWaitingSince = time.Time{}
		return false
	}
	now := c.now()
	if a.gangWaitingSince.IsZero() {
		a.gangWaitingSince = now
	}
	return now.Sub(a.gangWaitingSince) >= c.cfg.GangReserveAfter
}

// holdForGang drops from cands (in the round's order) the apps behind
// the first gang that has waited --gang-reserve-after and could fit: they
// get nothing while it waits, so that what frees is left for it, and are
// told why. The gang need not be a candidate of this round (it may be
// waiting for its executor ids to be written). before is the round's
// order.
func (c *core) holdForGang(rnd *shareRound, cands []candidate, before func(x, y *appInfo) bool) []candidate {
	clear(c.heldForGang)
	var gang *appInfo
	for _, a := range c.appOrder {
		if a.rec.Desc.Gang == 0 || !wantsCores(a) || a.gangRestarting || !c.gangReserving(a) || (gang != nil && !before(a, gang)) {
			continue
		}
		if qr := rnd.queues[queueName(a.rec.Desc.Queue)]; qr != nil && c.gangCouldFit(candidate{a: a, qr: qr}) {
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
		if c.heldForGang == nil {
			c.heldForGang = map[*appInfo]string{}
		}
		c.heldForGang[cd.a] = gang.rec.ID
	}
	return kept
}

// gangCouldFit reports whether cd's gang could ever be placed whole: the
// schedulable workers, empty, hold its N executors, and its queue's
// limit allows them. A gang that never could must not hold anyone back.
func (c *core) gangCouldFit(cd candidate) bool {
	d := cd.a.rec.Desc
	if cd.qr.limit != nil && float64(d.Gang*d.CoresPerExecutor) > cd.qr.limit[0]+1e-9 {
		return false
	}
	return c.gangFitsWorkers(d)
}

// gangFitsWorkers reports whether the schedulable workers, empty, could
// hold a gang of d whole.
func (c *core) gangFitsWorkers(d wire.AppDescription) bool {
	if d.CoresPerExecutor <= 0 {
		return false // submissions refuse it; a restored record must not divide by it
	}
	if d.Gang*d.CoresPerExecutor > c.capacity.cores {
		return false
	}
	slots := 0
	for _, w := range c.sortedWorkerList() { // only while a gang waits long: O(workers)
		if w.placeable() && wire.Satisfies(w.rec.Labels, d.Constraints) {
			n := w.rec.Cores / d.CoresPerExecutor
			if d.MemoryPerExecutorMB > 0 {
				n = min(n, w.rec.MemoryMB/d.MemoryPerExecutorMB)
			}
			if slots += n; slots >= d.Gang {
				return true
			}
		}
	}
	return false
}

// restartGang kills the rest of a's gang once one member ended, for an
// app that asks gangRestart: the whole gang is then placed again.
func (c *core) restartGang(a *appInfo, ended *executorInfo) {
	if a.rec.Desc.Gang == 0 || !a.rec.Desc.GangRestart || a.ending != nil || a.gangRestarting || a.state.Finished() {
		return
	}
	a.gangRestarting, a.gangWaitingSince = true, time.Time{}
	why := fmt.Sprintf("gang restart: executor %d of the gang ended (%s)", ended.id, ended.state)
	c.log.Info("restarting an app's gang", "app", a.rec.ID, "why", why, "members", len(a.executors))
	for _, e := range sortedExecutors(a.executors) {
		if !e.launching {
			c.endExecutor(e, executorEnd{state: wire.ExecutorKilled, message: why, event: wire.EventExecutorUpdated, note: why, kill: true}, nil)
		}
	}
}

// wholeGangs finds, among a round's launches, those of gangs being
// formed: a gang given fewer than its N executors, or whose members'
// ports cannot all be had, is dropped whole (its launches' indexes in
// dropped); the ports of a gang kept are taken here, by launch index.
func (c *core) wholeGangs(launches []placement.Launch, byID map[string]candidate) (map[int]map[string]int, map[int]bool) {
	var members map[string][]int
	for i, l := range launches {
		if cd, ok := byID[l.AppID]; ok && cd.a.gangForming() {
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
	for _, id := range sortedKeys(members) {
		a, idx := byID[id].a, members[id]
		whole := len(idx) >= a.rec.Desc.Gang
		var taken []int
		for _, i := range idx {
			if !whole {
				break
			}
			w := c.workers[launches[i].WorkerID]
			ports, ok := map[string]int(nil), w != nil
			if ok {
				ports, ok = w.ports.take(a.rec.Desc.Ports)
			}
			if !ok {
				whole = false
				break
			}
			portsOf[i], taken = ports, append(taken, i)
		}
		if whole {
			a.gangWaitingSince = time.Time{}
			continue
		}
		for _, i := range taken {
			c.workers[launches[i].WorkerID].ports.release(portsOf[i])
			delete(portsOf, i)
		}
		for _, i := range idx {
			dropped[i] = true
		}
		c.log.Debug("gang not placed whole this round", "app", id, "gang", a.rec.Desc.Gang, "placeable", len(idx))
	}
	return portsOf, dropped
}

// gangWaiting says why a forming gang waits, or "".
func (c *core) gangWaiting(a *appInfo) string {
	switch {
	case a.gangRestarting:
		return fmt.Sprintf("waiting: its gang is being restarted (%d members still to end)", len(a.executors))
	case !a.gangForming():
		return ""
	}
	if !c.gangFitsWorkers(a.rec.Desc) {
		return fmt.Sprintf("waiting: a gang of %d executors of %d cores starts whole or not at all, and the schedulable workers could not hold all of them even empty: it waits for more workers (nothing is held for it)", a.rec.Desc.Gang, a.rec.Desc.CoresPerExecutor)
	}
	held := ""
	if !a.gangWaitingSince.IsZero() {
		if wait := c.now().Sub(a.gangWaitingSince); wait >= c.cfg.GangReserveAfter {
			held = "; capacity is held for it as it frees"
		} else {
			held = fmt.Sprintf("; capacity is held for it after %s", (c.cfg.GangReserveAfter - wait).Round(time.Second))
		}
	}
	return fmt.Sprintf("waiting: a gang of %d executors of %d cores starts whole or not at all, and the cluster has no room for all of them now%s", a.rec.Desc.Gang, a.rec.Desc.CoresPerExecutor, held)
}
