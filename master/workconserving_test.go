package master

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// freeCores is the cores free on ALIVE workers.
func (h *harness) freeCores() int {
	n := 0
	for _, w := range h.c.workers {
		if w.state == wire.WorkerAlive {
			n += w.coresFree()
		}
	}
	return n
}

// With etl holding 3 cores of two 4-core workers, an app in default of no
// fixed size got 2 cores on one worker and never took the 2 free on the
// other; a second, --max-cores 1, waited beside a free core, saying it
// waited for its fair share. After a round, no demand that fits is left
// beside free room, whatever its executors' shape. Here the first is of
// at most 4 cores, so that a core stays free: it takes its 4 across both
// workers (neither has 4 free); an etl app of 2-core executors, which the
// free core cannot hold, keeps etl owed and default over its fair share,
// so only the pass beyond the fair shares can place the second, and it
// must take the core (before issue 33's fix it waited beside it).
func TestNoIdleCoresBesideAnAppOfNoFixedSize(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 4096)
	h.addWorker("w2", 4, 4096)
	h.setQueue("etl", wire.QueueSpec{Guarantee: &wire.Amount{Cores: 3}})
	etl := oneCoreApp("etl", 0)
	etl.MaxCores = 3
	e := h.addApp(etl)
	h.running(e)
	if e.coresGranted != 3 || h.freeCores() != 5 {
		t.Fatalf("etl holds %s, %d cores free: want 3 held and 5 free", layout(e), h.freeCores())
	}
	whole := h.addApp(wire.AppDescription{Command: []string{"x"}, MaxCores: 4, MemoryPerExecutorMB: 100})
	h.running(whole)
	if whole.coresGranted != 4 || len(whole.executors) != 2 || h.freeCores() != 1 {
		t.Fatalf("default's app of no fixed size, at most 4 cores, holds %s (%d cores), %d cores free: want 4 on both workers, 1 left", layout(whole), whole.coresGranted, h.freeCores())
	}
	pairs := oneCoreApp("etl", 0)
	pairs.CoresPerExecutor = 2
	p := h.addApp(pairs)
	if len(p.executors) != 0 || h.freeCores() != 1 {
		t.Fatalf("etl's app of 2-core executors holds %s beside %d free cores: want nothing (no worker has 2 free)", layout(p), h.freeCores())
	}
	one := h.addApp(wire.AppDescription{Command: []string{"x"}, MaxCores: 1, MemoryPerExecutorMB: 100})
	h.running(one)
	if st := mustAppStatus(t, h, one.rec.ID); one.coresGranted != 1 || h.freeCores() != 0 || st.Waiting != "" {
		t.Errorf("an app of --max-cores 1 holds %s beside %d free cores, saying %q: want the free core taken", layout(one), h.freeCores(), st.Waiting)
	}
}

// Work conservation, over random clusters, queues and executor shapes:
// after the rounds, no app wants an executor that a worker has the room
// for (cores, memory, its queue's limit, its own max and executor limit)
// while it waits; and its waiting reason does not blame its fair share
// when room is there for it.
func TestNoPlaceableDemandBesideFreeRoom(t *testing.T) {
	for seed := range uint64(1000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		h := newLeader(t, func(c *Config) { c.PreemptionDelay = time.Hour })
		for i := range 1 + rng.IntN(4) {
			h.addWorker(fmt.Sprintf("w%d", i), 1+rng.IntN(8), 1024*(1+rng.IntN(8)))
		}
		queues := []string{wire.DefaultQueue}
		for i := range rng.IntN(3) {
			name := fmt.Sprintf("q%d", i)
			spec := wire.QueueSpec{Weight: weight(float64(1 + rng.IntN(3)))}
			if rng.IntN(2) == 0 {
				spec.Guarantee = &wire.Amount{Cores: rng.IntN(3)}
			}
			if rng.IntN(3) == 0 {
				spec.Limit = &wire.Amount{Cores: 1 + rng.IntN(6)}
			}
			if _, err := h.setQueue(name, spec); err == nil {
				queues = append(queues, name)
			}
		}
		var apps []*appInfo
		for range 1 + rng.IntN(5) {
			d := wire.AppDescription{Command: []string{"x"}, MemoryPerExecutorMB: 100 * (1 + rng.IntN(20)), ProcessSpec: wire.ProcessSpec{Queue: queues[rng.IntN(len(queues))]}}
			if rng.IntN(2) == 0 {
				d.CoresPerExecutor = 1 + rng.IntN(3)
			}
			if rng.IntN(2) == 0 {
				d.MaxCores = max(d.CoresPerExecutor, 1+rng.IntN(8))
			}
			a := h.addApp(d)
			apps = append(apps, a)
			for _, b := range apps {
				h.running(b)
			}
		}
		h.pass(3*time.Second, h.workerIDs()...)
		for _, a := range apps {
			h.running(a)
		}
		for _, a := range apps {
			st := mustAppStatus(t, h, a.rec.ID)
			if why := h.falseReason(a, st.Waiting); why != "" {
				t.Errorf("seed %d: app %s (queue %s, %d cores per executor, %d MB, max %d) holds %s and says %q: %s",
					seed, a.rec.ID, wire.QueueName(a.rec.Desc.Queue), a.rec.Desc.CoresPerExecutor, a.rec.Desc.MemoryPerExecutorMB, a.rec.Desc.MaxCores, layout(a), st.Waiting, why)
			}
			if w := h.roomFor(a); w != "" {
				st := mustAppStatus(t, h, a.rec.ID)
				t.Errorf("seed %d: app %s (queue %s, %d cores per executor, %d MB, max %d) holds %s and waits beside room on %s: %q",
					seed, a.rec.ID, wire.QueueName(a.rec.Desc.Queue), a.rec.Desc.CoresPerExecutor, a.rec.Desc.MemoryPerExecutorMB, a.rec.Desc.MaxCores, layout(a), w, st.Waiting)
			}
		}
	}
}

// workerIDs are the harness's workers' ids.
func (h *harness) workerIDs() []string {
	return slices.Sorted(maps.Keys(h.c.workers))
}

// roomFor is a worker with room for one more executor of a that nothing
// bounds: its queue's limit, its max cores and executor limit allow it,
// the worker is placeable and a is not kept off it; "" if none.
func (h *harness) roomFor(a *appInfo) string {
	if !(a.eligible() && a.coresLeft() > 0) || len(a.executors) >= a.executorLimit() {
		return ""
	}
	step := placement.ExecutorStep(a.rec.Desc.CoresPerExecutor, h.c.cfg.MinCoreUnit, a.coresLeft())
	if a.coresLeft() < step {
		return "" // a fixed size bigger than what its max cores leave it
	}
	if lim := h.c.queues[wire.QueueName(a.rec.Desc.Queue)].rec.Limit; lim != nil && lim.Cores > 0 {
		if h.queueCores(wire.QueueName(a.rec.Desc.Queue))+step > lim.Cores {
			return ""
		}
	}
	for _, id := range h.workerIDs() {
		w := h.c.workers[id]
		if !w.placeable() || a.excluded[id].Until.After(h.c.now()) {
			continue
		}
		if w.coresFree() >= step && w.memoryFree() >= a.rec.Desc.MemoryPerExecutorMB {
			if _, on := a.hosts[id]; on && a.rec.Desc.CoresPerExecutor == 0 {
				continue // it has its one executor there already
			}
			return id
		}
	}
	return ""
}

// queueCores are the cores the apps of queue hold.
func (h *harness) queueCores(queue string) int {
	held := 0
	for _, b := range h.c.appOrder {
		if wire.QueueName(b.rec.Desc.Queue) == queue {
			held += b.coresGranted
		}
	}
	return held
}

// falseReason says what is false of an app's waiting reason, "" if
// nothing: one that could never start anywhere says "cannot start", one
// that could says no such thing; one that waits for its fair share has a
// queue below it, one that holds it is not below it; one that blames its
// queue's limit is at it; one that blames its executor limit or an
// exclusion has one; one that finds no room has none.
func (h *harness) falseReason(a *appInfo, why string) string {
	if !(a.eligible() && a.coresLeft() > 0) || len(a.executors) >= a.executorLimit() || why == "" {
		return ""
	}
	step := placement.ExecutorStep(a.rec.Desc.CoresPerExecutor, h.c.cfg.MinCoreUnit, a.coresLeft())
	ever := false // some worker could hold one executor, were it empty
	for _, w := range h.c.workers {
		if w.placeable() && w.rec.Cores >= step && w.rec.MemoryMB >= a.rec.Desc.MemoryPerExecutorMB {
			ever = true
		}
	}
	switch {
	case !ever && len(a.executors) == 0 && !strings.HasPrefix(why, "cannot start"):
		return "no worker could ever hold one of its executors: want \"cannot start\""
	case ever && strings.HasPrefix(why, "cannot start"):
		return "a worker could hold one when empty: not \"cannot start\""
	case strings.Contains(why, "is held for queue"):
		// The room freed by a preemption, held for the queue it was for
		// (scheduler/holds.go): a hold must be there, for another queue.
		held := false
		for _, hold := range h.c.round.roomHolds {
			held = held || hold.Queue != wire.QueueName(a.rec.Desc.Queue)
		}
		if !held {
			return "it says room is held for another queue, and none is"
		}
	case strings.Contains(why, "executor limit reached"):
		return fmt.Sprintf("it runs %d executors, under its limit of %d", len(a.executors), a.executorLimit())
	case strings.Contains(why, "at its limit"):
		// Its queue's limit: the queue named must be a's, with a limit its
		// apps' cores and one more executor's would pass.
		name := wire.QueueName(a.rec.Desc.Queue)
		if !strings.Contains(why, "queue "+name+" at its limit") {
			return "it blames the limit of a queue not its own"
		}
		lim := h.c.queues[name].rec.Limit
		if lim == nil || lim.Cores == 0 {
			return "its queue has no limit of cores"
		}
		if held := h.queueCores(name); held+step <= lim.Cores {
			return fmt.Sprintf("its queue holds %d cores of its limit %d, room for one more of %d", held, lim.Cores, step)
		}
	case strings.Contains(why, "kept off worker"):
		kept := false
		for _, x := range a.excluded {
			kept = kept || x.Until.After(h.c.now())
		}
		if !kept {
			return "it says it is kept off a worker, and no exclusion of it is in force"
		}
	case strings.Contains(why, "holds its fair share") && strings.Contains(why, "while others are owed"):
		q := h.c.queues[wire.QueueName(a.rec.Desc.Queue)].view
		if q.DominantShare < q.FairDominantShare-1e-9 {
			return fmt.Sprintf("its queue is below its fair share (%.3f of %.3f): it does not hold it", q.DominantShare, q.FairDominantShare)
		}
	case strings.Contains(why, "no worker has") && strings.Contains(why, "free"):
		if w := h.roomFor(a); w != "" {
			return "it says no worker has the room, and " + w + " has"
		}
	case strings.Contains(why, "waiting for fair share"):
		q := h.c.queues[wire.QueueName(a.rec.Desc.Queue)].view
		if q.DominantShare >= q.FairDominantShare-1e-9 {
			return fmt.Sprintf("its queue is at its fair share (%.3f of %.3f): it waits for something else", q.DominantShare, q.FairDominantShare)
		}
	}
	return ""
}
