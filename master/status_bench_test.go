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
	if st := h.c.clusterStatus(true); len(st.Workers) != 10000 || len(st.ActiveApps) != 1000 || len(st.ActiveApps[999].Executors) != 3 {
		b.Fatalf("setup: %d workers, %d apps", len(st.Workers), len(st.ActiveApps))
	}
	for b.Loop() {
		h.c.clusterStatus(true)
	}
}
