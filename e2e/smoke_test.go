package e2e

import (
	"testing"
	"time"
)

// TestSmoke: one master, one worker, the worker registers.
func TestSmoke(t *testing.T) {
	m := startMaster(t, masterOpts{extra: []string{"--worker-timeout", "3s"}})
	startWorker(t, []string{m.url}, 2, "1g")
	aliveWorkers(t, newClient(t, m.url), 1, 15*time.Second)
}
