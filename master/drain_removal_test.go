package master

import (
	"net/http"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// A drain accepted while the worker's removal was being written put the
// whole worker record back after the removal's delete: the removed worker
// was DECOMMISSIONING for ever, never removed again, and its registration
// when it came back was never answered.
func TestAWorkerBeingRemovedIsNotDrained(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 4096)
	var left answer[wire.None]
	var drain, undrain answer[wire.WorkerStatus]
	h.c.workerLeft("w1", left.reply())
	h.c.drainWorker("w1", time.Minute, drain.reply())
	h.c.undrainWorker("w1", undrain.reply())
	h.commit()
	if s := left.status(t, "the worker's leaving"); s != http.StatusOK {
		t.Fatalf("the worker's leaving: %d %v", s, left.err)
	}
	if s := drain.status(t, "the drain"); s != http.StatusConflict {
		t.Errorf("a drain of a worker being removed: %d %v, want 409", s, drain.err)
	}
	if s := undrain.status(t, "the undrain"); s != http.StatusConflict && s != http.StatusNotFound {
		t.Errorf("an undrain of a worker being removed: %d %v, want 409", s, undrain.err)
	}
	if h.fx.state.Workers["w1"] != nil {
		t.Errorf("the removed worker's record is back")
	}
	// It comes back and registers: answered, ALIVE.
	var reg answer[wire.RegisteredWorker]
	h.c.registerWorker(wire.RegisterWorker{ID: "w1", Host: "127.0.0.1", Port: 10000, Cores: 4, MemoryMB: 4096,
		Address: "http://127.0.0.1:10000", Incarnation: "w1-2"}, reg.reply())
	h.commit()
	if s := reg.status(t, "its registration"); s != http.StatusOK {
		t.Fatalf("its registration: %d %v", s, reg.err)
	}
	if w := h.c.workers["w1"]; w == nil || w.state != wire.WorkerAlive {
		t.Errorf("the worker after registering again: %+v", w)
	}
}
