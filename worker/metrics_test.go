package worker

import (
	"net/http"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The worker's metrics follow what it runs: a launch, a live process by
// kind and state, its end by state.
func TestWorkerMetricsFollowItsProcesses(t *testing.T) {
	_, tw := startParallel(t, nil)
	scrape := func() func(string, ...string) float64 {
		f := testproc.Scrape(t, tw.URL()+"/metrics", testSecret)
		return func(name string, labels ...string) float64 { return testproc.Value(f, name, labels...) }
	}
	tw.runSleeper("app-m", 0)
	m := scrape()
	if m("berth_worker_launches_total", "kind", "executor") != 1 || m("berth_worker_processes", "kind", "executor", "state", "RUNNING") != 1 {
		t.Errorf("after a launch: launches %v, running %v", m("berth_worker_launches_total", "kind", "executor"), m("berth_worker_processes", "kind", "executor", "state", "RUNNING"))
	}
	if m("berth_worker_cleanup_sweeps_total") < 1 {
		t.Errorf("cleanup sweeps %v: the first runs at start", m("berth_worker_cleanup_sweeps_total"))
	}
	tw.mustCall(http.StatusOK, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-m", ExecutorID: 0})
	testproc.Eventually(t, 10*time.Second, "the kill counted", func() bool {
		m = scrape()
		return m("berth_worker_exits_total", "kind", "executor", "state", "KILLED") == 1
	})
	if v := m("berth_worker_processes", "kind", "executor", "state", "RUNNING"); v != -1 {
		t.Errorf("a killed executor still counted running: %v", v)
	}
	req, _ := http.NewRequest(http.MethodGet, tw.URL()+"/metrics", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without the secret: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}
