package e2e

import (
	"testing"
	"time"
)

// TestSmoke: one master, one worker, the worker registers.
func TestSmoke(t *testing.T) {
	cl := startCluster(t, clusterSpec{flags: []string{"--worker-timeout", "3s"}})
	cl.addWorker("w1", 2, "1g")
	cl.waitWorkers(15*time.Second, "w1")
}
