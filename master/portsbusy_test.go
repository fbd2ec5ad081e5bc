package master

import (
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// A process of the worker's host held ports the master then gave an
// executor ("Address already in use"). Now the worker refuses the launch
// (ports_busy): the executor is replaced, LOST, counted neither against
// the app nor the worker; and the ports its heartbeat lists as held are
// given to no process until it stops listing them.
func TestPortsHeldOnTheHostAreRefusedAndAvoided(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	desc := oneCoreApp("default", 0)
	desc.Ports, desc.MaxCores = []string{"http"}, 1
	a := h.addApp(desc)
	h.commit()
	sent := h.takeSent(wire.WorkerAPI.LaunchExecutor.Pattern)
	if len(sent) != 1 {
		t.Fatalf("%d launches", len(sent))
	}
	held := sent[0].cmd.body.(wire.LaunchExecutor).Ports["http"]
	// The worker's answer, then the heartbeat it sends at once.
	h.c.commandFailed("w1", sent[0].cmd, &httpx.StatusError{Status: 409, Code: wire.CodePortsBusy, Message: "not started: ports [20000] are held by another process of this host"})
	if _, err := h.c.heartbeat("w1", wire.Heartbeat{BusyPorts: []int{held, held + 1}}); err != nil {
		t.Fatal(err)
	}
	h.commit()
	if a.retryCount != 0 || h.c.workers["w1"].unhealthy != "" || len(a.excluded) != 0 {
		t.Errorf("after the refusal: retries %d, worker unhealthy %q, exclusions %v: want none", a.retryCount, h.c.workers["w1"].unhealthy, a.excluded)
	}
	again := h.takeSent(wire.WorkerAPI.LaunchExecutor.Pattern)
	if len(again) != 1 {
		t.Fatalf("%d launches after the refusal, want the replacement", len(again))
	}
	if p := again[0].cmd.body.(wire.LaunchExecutor).Ports["http"]; p == held || p == held+1 {
		t.Errorf("the replacement was given port %d, which the worker said is held", p)
	}
	w := h.c.workers["w1"]
	if w.ports.Free() != w.ports.Range().Size()-1-2 {
		t.Errorf("%d ports free, want the range less the one given and the two held", w.ports.Free())
	}
	// Once the heartbeat lists them no more, they are free again.
	if _, err := h.c.heartbeat("w1", wire.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
	if w.ports.Free() != w.ports.Range().Size()-1 {
		t.Errorf("%d ports free once nothing is held, want the range less the one given", w.ports.Free())
	}
}
