package master

import (
	"iter"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// fleet is the master's workers as the scheduler reads them
// (scheduler.Fleet): answers built from the workers as they are, nothing
// copied ahead of a question.
type fleet struct{ c *core }

func (f fleet) Worker(id string) (scheduler.Worker, bool) {
	w := f.c.workers[id]
	if w == nil {
		return scheduler.Worker{}, false
	}
	return w.view(), true
}

func (f fleet) Workers() iter.Seq[scheduler.Worker] {
	return func(yield func(scheduler.Worker) bool) {
		for _, w := range f.c.sortedWorkerList() {
			if !yield(w.view()) {
				return
			}
		}
	}
}

func (f fleet) ResourcesFree(id string) map[string][]int {
	if w := f.c.workers[id]; w != nil {
		return w.resourcesFree()
	}
	return nil
}

func (f fleet) ResourcesOffered(id string) map[string][]int {
	if w := f.c.workers[id]; w != nil {
		return (&workerInfo{rec: w.rec}).resourcesFree()
	}
	return nil
}

func (f fleet) Slots() int { return f.c.slots.next }

// view is w as the scheduler sees it.
func (w *workerInfo) view() scheduler.Worker {
	return scheduler.Worker{
		ID: w.rec.ID, Slot: w.slot, Cores: w.rec.Cores, MemoryMB: w.rec.MemoryMB,
		CoresFree: w.coresFree(), MemoryFreeMB: w.memoryFree(), Labels: w.rec.Labels, Ports: &w.ports,
		Resources: len(w.rec.Resources) > 0, Tags: w.tags,
		Schedulable: w.schedulable(), DiskFull: w.diskFull != "", Unhealthy: w.unhealthy != "",
	}
}

// workerSlots hands out scheduler.Worker.Slot: a small number per known
// worker, reused once the worker is forgotten, so that the scheduler's
// arrays by worker stay as long as the fleet.
type workerSlots struct {
	next int
	free []int
}

// give gives w a slot if it has none.
func (s *workerSlots) give(w *workerInfo) {
	if w.slot >= 0 {
		return
	}
	if n := len(s.free); n > 0 {
		w.slot, s.free = s.free[n-1], s.free[:n-1]
		return
	}
	w.slot = s.next
	s.next++
}

// take takes w's slot back: an executor that still names w is then on no
// worker the scheduler sees.
func (s *workerSlots) take(w *workerInfo) {
	if w.slot >= 0 {
		s.free = append(s.free, w.slot)
		w.slot = -1
	}
}

// executorHistory is an app's executors by age as the scheduler reads
// them (scheduler.ExecutorList).
type executorHistory struct{ a *appInfo }

func (h executorHistory) Len() int { return len(h.a.bySeq) }

func (h executorHistory) Seq(i int) uint64 { return h.a.bySeq[i].seq }

func (h executorHistory) At(i int) scheduler.Executor {
	e := h.a.bySeq[i]
	return scheduler.Executor{ID: e.id, WorkerSlot: e.worker.slot, Cores: e.cores, MemoryMB: e.memory, Seq: e.seq,
		Takeable: h.a.executors[e.id] == e && !e.launching && !e.ending && e.preemptedFor == "" && e.state == wire.ExecutorRunning}
}
