package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// TestTwoWorkersOfOneHostHandOutPortsOfTheirOwn: README's hand-run layout,
// two workers on one host with the default --port-range, both handed out
// 23000 (issue 30). Each now takes its host slot's block of 1000 ports of
// the default range: the executors of one app spread over both get ports
// of two disjoint blocks, none twice. Not parallel: the default range is
// the machine's, not a test's (every other test gives its workers ranges
// of their own).
func TestTwoWorkersOfOneHostHandOutPortsOfTheirOwn(t *testing.T) {
	cl := startCluster(t, clusterSpec{workers: []string{"w1", "w2"}, cores: 2, memory: "1g", defaultPorts: true})
	app := cl.registerApp(t, wire.AppDescription{Name: "ported", Command: []string{"sleep", "600", cl.marker},
		MaxCores: 4, CoresPerExecutor: 1, MemoryPerExecutorMB: 64, ProcessSpec: wire.ProcessSpec{Ports: []string{"http", "admin"}}})
	a := cl.appWhen(app, 30*time.Second, "four executors running, two on each worker", func(a wire.AppStatus) error {
		running := executorsIn(a, wire.ExecutorRunning)
		on := map[string]int{}
		for _, e := range running {
			on[e.WorkerID]++
		}
		if len(running) != 4 || on["w1"] != 2 || on["w2"] != 2 {
			return fmt.Errorf("executors %s", describeExecs(a))
		}
		return nil
	})
	blocks := map[string]map[int]bool{} // worker → the 1000-blocks of its ports
	seen := map[int]string{}
	for _, e := range executorsIn(a, wire.ExecutorRunning) {
		for label, p := range e.Ports {
			if !wire.DefaultPortRange.Contains(p) {
				t.Errorf("executor %d on %s: port %s=%d outside the default range %v", e.ID, e.WorkerID, label, p, wire.DefaultPortRange)
			}
			if other, ok := seen[p]; ok {
				t.Errorf("port %d handed out twice: on %s and on %s", p, other, e.WorkerID)
			}
			seen[p] = e.WorkerID
			if blocks[e.WorkerID] == nil {
				blocks[e.WorkerID] = map[int]bool{}
			}
			blocks[e.WorkerID][(p-wire.DefaultPortRange.First)/1000] = true
		}
	}
	if len(seen) != 8 {
		t.Fatalf("%d distinct ports for 4 executors of 2 ports each: %v", len(seen), seen)
	}
	for w, bs := range blocks {
		if len(bs) != 1 {
			t.Errorf("worker %s handed out ports of blocks %v, want one block of its own", w, bs)
		}
	}
	for b := range blocks["w1"] {
		if blocks["w2"][b] {
			t.Errorf("w1 and w2 both hand out ports of block %d (%d-%d)", b, wire.DefaultPortRange.First+1000*b, wire.DefaultPortRange.First+1000*b+999)
		}
	}
}
