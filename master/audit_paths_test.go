package master

import (
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// asRequest runs f as the request route on target would run: with its
// audit tag set, as the loop sets it.
func asRequest(h *harness, route, target string, f func()) {
	h.c.req = &auditTag{route: route, target: target, principal: httpx.Principal{Kind: httpx.KindOperator}}
	defer func() { h.c.req = nil }()
	f()
}

// Requests whose write is made later, or made without the usual commit,
// are audited all the same: a worker's registration, and a driver kill
// that waited for the driver's launch write.
func TestAuditedOutsideTheUsualPath(t *testing.T) {
	h := newLeader(t, nil)
	id := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64}) // no worker: it waits
	// The registration commits; the driver's launch on the worker is left
	// in flight.
	asRequest(h, "POST /v1/workers", "w1", func() { h.addWorkerNoCommit("w1") })
	if !inAudit(h, "POST /v1/workers", "w1") {
		t.Errorf("a worker's registration is not in the audit log %+v", h.fx.state.Audit)
	}
	d := h.c.drivers[id]
	if !d.writes.busy {
		t.Fatal("the driver's launch write is not in flight: the test needs a kill queued behind it")
	}
	var answered error = errNotYet
	asRequest(h, "DELETE /v1/drivers/{id}", id, func() {
		h.c.killDriver(id, func(_ wire.DriverStatus, err error) { answered = err })
	})
	h.commit()
	if answered != nil {
		t.Fatalf("the kill: %v", answered)
	}
	if !inAudit(h, "DELETE /v1/drivers/{id}", id) {
		t.Errorf("a kill queued behind the driver's launch is not in the audit log %+v", h.fx.state.Audit)
	}
}

var errNotYet = httpx.Errorf(599, "not answered")

func inAudit(h *harness, route, target string) bool {
	for _, e := range h.fx.state.Audit {
		if e.Route == route && e.Target == target && e.Outcome == "ok" {
			return true
		}
	}
	return false
}
