package scheduler

import (
	"cmp"
	"slices"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// placeDrivers gives each waiting driver, by priority then first come
// first served, the next worker round the ring that has room
// (spark.deploy.spreadOutDrivers): drivers spread over the workers instead
// of piling onto the first. A driver whose queue is at its limit waits.
//
// With --max-drivers N, no more than N drivers run (or are being launched)
// at once (spark.deploy.maxDrivers): drivers that take every core leave
// their own apps none and wait on them for ever (SPARK-27750).
//
// The index learns of each placement at once (Index.Put), so that the
// executors placed next see the room the drivers took.
func (r *round) placeDrivers(rnd *shareRound) {
	var alive []Worker
	for w := range r.v.Fleet.Workers() {
		if w.Placeable() {
			alive = append(alive, w)
		}
	}
	placed := len(r.v.Drivers)
	waiting := slices.Clone(r.v.WaitingDrivers)
	slices.SortStableFunc(waiting, func(a, b Driver) int { return cmp.Compare(b.Priority, a.Priority) })
	defer r.putDriversWorkers()
	for _, d := range waiting {
		if r.cfg.MaxDrivers > 0 && placed >= r.cfg.MaxDrivers {
			return
		}
		if d.Busy {
			continue // being ended, or written: decided when that write is done
		}
		qr := rnd.queues[d.Queue]
		use := rnd.vec(d.Cores, d.MemoryMB, d.Resources, 1)
		if qr == nil || !qr.usage.Add(use).Fits(qr.limit) {
			continue // its queue is at its limit
		}
		for range len(alive) {
			w := r.use(alive[r.plan.DriverCursor%len(alive)])
			r.plan.DriverCursor++
			if w.coresFree() < d.Cores || w.memoryFree() < d.MemoryMB || !wire.Satisfies(w.Labels, d.Constraints) {
				continue
			}
			// PickResources takes what it picks from the map it is given:
			// a copy, so that take subtracts the driver's share once, and a
			// worker refused for want of ports keeps its addresses.
			picked, ok := placement.PickResources(cloneFree(r.resourcesFree(w)), d.Resources)
			if !ok || w.freePorts() < len(d.Ports) {
				continue
			}
			ports, _ := r.takePorts(w, d.Ports)
			r.take(w, d.Cores, d.MemoryMB, picked, d.Resources)
			r.plan.Drivers = append(r.plan.Drivers, DriverPlacement{DriverID: d.ID, WorkerID: w.ID, Resources: picked, Ports: ports})
			qr.usage = qr.usage.Add(use)
			placed++
			break
		}
	}
}

// putDriversWorkers puts the workers drivers were placed on in the index
// with the room they have left.
func (r *round) putDriversWorkers() {
	seen := map[string]bool{}
	for _, p := range r.plan.Drivers {
		if seen[p.WorkerID] {
			continue
		}
		seen[p.WorkerID] = true
		u := r.used[p.WorkerID]
		r.v.Index.Put(placement.Worker{ID: u.ID, CoresFree: u.coresFree(), MemoryFreeMB: u.memoryFree(), Resources: cloneFree(r.resourcesFree(u)), Tags: u.Tags})
	}
}

// cloneFree copies free resources: the index keeps what it is given, and
// the round goes on changing its own.
func cloneFree(free map[string][]int) map[string][]int {
	if free == nil {
		return nil
	}
	out := make(map[string][]int, len(free))
	for name, units := range free {
		out[name] = slices.Clone(units)
	}
	return out
}
