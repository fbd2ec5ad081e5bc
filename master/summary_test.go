package master

import (
	"net/http"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// GET /v1/cluster?workers=false: the workers' summary without their list
// (a cluster of 100,000 workers stays cheap to ask); the summary is there
// with the list too. A bad value is a 400 naming the parameter.
func TestClusterWorkerSummary(t *testing.T) {
	h := newHarness(t, nil)
	h.lead(nil)
	h.addWorker("w1", 4, 4096)
	h.addWorker("w2", 8, 8192)
	h.addApp(wire.AppDescription{MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 512})
	want := wire.WorkerSummary{Total: 2, Alive: 2, Cores: 12, CoresUsed: 2, MemoryMB: 12288, MemoryUsedMB: 1024}
	for _, list := range []bool{true, false} {
		st := h.c.clusterStatus(true, list)
		if st.WorkerSummary != want || (len(st.Workers) == 2) != list {
			t.Errorf("list %v: summary %+v (want %+v), %d workers listed", list, st.WorkerSummary, want, len(st.Workers))
		}
	}
	if _, err := parseBoolParam(wire.ClusterWorkersParam, "nope"); httpx.StatusOf(err) != http.StatusBadRequest {
		t.Errorf("workers=nope: %v, want 400", err)
	}
}
