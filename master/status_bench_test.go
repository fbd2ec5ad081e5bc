package master

import (
	"fmt"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// BenchmarkClusterStatus is the loop's part of a UI page or GET
// /v1/cluster: the status of 10,000 workers and 1,000 running apps (3
// executors each), with every waiting reason worked out. The UI's own
// rendering is ui's BenchmarkPages.
//
//	go test -run XXX -bench ClusterStatus -benchmem ./master
func BenchmarkClusterStatus(b *testing.B) {
	h := newHarness(b, nil)
	h.lead(nil)
	for i := range 10000 {
		h.addWorker(fmt.Sprintf("w%05d", i), 4, 8192)
	}
	for range 1000 {
		h.addApp(wire.AppDescription{MaxCores: 3, CoresPerExecutor: 1, MemoryPerExecutorMB: 512})
	}
	if st := h.c.clusterStatus(true, true); len(st.Workers) != 10000 || len(st.ActiveApps) != 1000 || len(st.ActiveApps[999].Executors) != 3 {
		b.Fatalf("setup: %d workers, %d apps", len(st.Workers), len(st.ActiveApps))
	}
	for b.Loop() {
		h.c.clusterStatus(true, true)
	}
}

// BenchmarkSchedulingPass is the master's part of placing one new app (4
// executors of 1 core) on a cluster of 1,000 to 100,000 workers: the app's
// registration, the scheduling pass over its placement index, the launches'
// records committed, and the app's end (so that every iteration sees the
// same cluster). The pass must not cost in proportion to the workers.
//
//	go test -run XXX -bench SchedulingPass -benchmem ./master
func BenchmarkSchedulingPass(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			h := newHarness(b, nil)
			h.lead(nil)
			for i := range n {
				h.addWorker(fmt.Sprintf("w%06d", i), 8, 16384)
			}
			for b.Loop() {
				a := h.addApp(wire.AppDescription{MaxCores: 4, CoresPerExecutor: 1, MemoryPerExecutorMB: 512})
				if len(a.executors) != 4 {
					b.Fatalf("%d executors placed", len(a.executors))
				}
				if _, err := h.call(func(reply func(any, error)) { h.c.endApp(a.rec.ID, wire.AppFinished, "done", reply) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClusterSummary is GET /v1/cluster?workers=false on a cluster of
// 100,000 workers with one app waiting (it needs its waiting reason).
func BenchmarkClusterSummary(b *testing.B) {
	h := newHarness(b, nil)
	h.lead(nil)
	for i := range 100000 {
		h.addWorker(fmt.Sprintf("w%06d", i), 8, 16384)
	}
	h.addApp(wire.AppDescription{MaxCores: 1, MemoryPerExecutorMB: 1 << 29})
	b.ReportAllocs()
	for b.Loop() {
		if st := h.c.clusterStatus(false, false); st.WorkerSummary.Total != 100000 || st.ActiveApps[0].Waiting == "" {
			b.Fatalf("summary %+v", st.WorkerSummary)
		}
	}
}

// BenchmarkTick is the loop's timers at 100,000 workers with nothing due:
// the pass every tick makes over the fleet (expiry, drains).
//
//	go test -run XXX -bench Tick -benchmem ./master
func BenchmarkTick(b *testing.B) {
	h := newHarness(b, nil)
	h.lead(nil)
	for i := range 100000 {
		h.addWorker(fmt.Sprintf("w%06d", i), 8, 16384)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.c.tick()
	}
	if n := len(h.c.sortedWorkerList()); n != 100000 {
		b.Fatalf("%d workers after the ticks", n)
	}
}
