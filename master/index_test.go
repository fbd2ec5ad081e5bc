package master

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// The master keeps its placement index (placement.Index) in step with its
// workers through registrations, launches, ends, drains, deaths and
// failovers: once synced it holds exactly the schedulable workers, each
// with the free capacity the master counts.
func TestIndexFollowsTheWorkers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	h := newLeader(t, func(c *Config) { c.WorkerTimeout = 10 * time.Second })
	check := func(when string) {
		t.Helper()
		h.c.syncIndex()
		want := map[string]placement.Worker{}
		for id, w := range h.c.workers {
			if w.schedulable() {
				want[id] = placement.Worker{ID: id, CoresFree: w.coresFree(), MemoryFreeMB: w.memoryFree()}
			}
		}
		if h.c.index.Len() != len(want) {
			t.Fatalf("%s: the index holds %d workers, %d are schedulable", when, h.c.index.Len(), len(want))
		}
		for id, w := range want {
			got, ok := h.c.index.Worker(id)
			if !ok || got.CoresFree != w.CoresFree || got.MemoryFreeMB != w.MemoryFreeMB {
				t.Fatalf("%s: index has %s as %+v (listed %v), the master counts %+v", when, id, got, ok, w)
			}
		}
	}
	var ids []string
	for i := range 8 {
		ids = append(ids, fmt.Sprintf("w%d", i))
		h.addWorker(ids[i], 4+r.IntN(8), 8192)
	}
	check("registered")
	var apps []*appInfo
	for step := range 60 {
		switch r.IntN(6) {
		case 0, 1:
			apps = append(apps, h.addApp(wire.AppDescription{MaxCores: 1 + r.IntN(12), CoresPerExecutor: 1 + r.IntN(2), MemoryPerExecutorMB: 512}))
		case 2: // an executor ends
			for _, a := range apps {
				for _, e := range a.executors {
					if !e.launching {
						h.report(e, wire.ExecutorExited, intp(0))
					}
					break
				}
			}
		case 3: // a drain, or its end
			id := ids[r.IntN(len(ids))]
			if w := h.c.workers[id]; w != nil && w.state == wire.WorkerAlive {
				run(h, func(reply reply[wire.WorkerStatus]) { h.c.drainWorker(id, time.Hour, reply) })
			} else if w != nil && w.state == wire.WorkerDecommissioning {
				run(h, func(reply reply[wire.WorkerStatus]) { h.c.undrainWorker(id, reply) })
			}
		case 4: // time passes; one worker falls silent
			var alive []string
			for _, id := range ids[1:] {
				alive = append(alive, id)
			}
			h.pass(3*time.Second, alive...)
		case 5:
			h.c.scheduleNow()
			h.commit()
		}
		check(fmt.Sprintf("step %d", step))
	}
	h.failover()
	check("after a failover")
}
