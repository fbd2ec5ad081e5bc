package master

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// A tenant refused in a loop (DELETE /v1/queues/<a megabyte>, 200 times)
// used to write every refusal whole to every master's log. Now each entry
// keeps a clipped target, and a principal's refusals beyond its ration are
// counted, not written; the count comes with its next entry.
func TestRefusalsOfOnePrincipalAreRationedAndClipped(t *testing.T) {
	h := newLeader(t, nil)
	tenant := httpx.Principal{Kind: httpx.KindTenant, Name: "c", Tenant: "c"}
	other := httpx.Principal{Kind: httpx.KindTenant, Name: "a", Tenant: "a"}
	target := strings.Repeat("a", 1<<20)
	refuse := func(p httpx.Principal) {
		h.c.auditRefused(&auditTag{principal: p, route: "DELETE /v1/queues/{id}", target: target}, string(wire.CodeForbidden), http.StatusForbidden)
		h.commit()
	}
	before := len(h.fx.state.Audit)
	for range 200 {
		refuse(tenant)
	}
	written := h.fx.state.Audit[before:]
	if len(written) != int(refusalsBurst) {
		t.Fatalf("%d of 200 refusals in a burst written, want the ration's %d", len(written), int(refusalsBurst))
	}
	for _, e := range written {
		if len(e.Target) > wire.MaxAuditText+32 || !strings.Contains(e.Target, "bytes cut") {
			t.Fatalf("target of %d bytes kept (%.40q...)", len(e.Target), e.Target)
		}
	}
	// Another principal has a ration of its own.
	refuse(other)
	if e := last(h); e.Principal != "tenant:a" || e.Suppressed != 0 {
		t.Errorf("another tenant's refusal: %+v", e)
	}
	// Once the ration refills, the next entry says how many went.
	h.clock.advance(time.Second)
	refuse(tenant)
	if e := last(h); e.Principal != "tenant:c" || e.Suppressed != 200-int(refusalsBurst) {
		t.Errorf("the entry after the flood: %+v, want suppressed %d", e, 200-int(refusalsBurst))
	}
	// A flood that stops is counted by the tick, in an entry of its own.
	for range 50 {
		refuse(tenant)
	}
	h.clock.advance(time.Second)
	h.c.tick()
	h.commit()
	if e := last(h); e.Principal != "tenant:c" || e.Outcome != wire.AuditNotRecorded || e.Suppressed == 0 {
		t.Errorf("the tick's entry: %+v, want %s with a count", e, wire.AuditNotRecorded)
	}
	// Full rations are forgotten: a principal's memory does not grow
	// with every caller ever refused.
	for range 60 {
		h.clock.advance(time.Second) // ticks as the loop's: a longer gap reads as a paused master
		h.c.tick()
	}
	if len(h.c.refusals) != 0 {
		t.Errorf("%d rations kept after a quiet minute", len(h.c.refusals))
	}
}

func last(h *harness) wire.AuditEntry { return h.fx.state.Audit[len(h.fx.state.Audit)-1] }

// A tenant's drivers draw on the tenant's one ration: 50 drivers each
// refused 200 times in an instant write the one burst, not 50 of them.
func TestRefusalsOfATenantsDriversShareItsRation(t *testing.T) {
	h := newLeader(t, nil)
	before := len(h.fx.state.Audit)
	for d := range 50 {
		p := httpx.Principal{Kind: httpx.KindDriver, Name: fmt.Sprintf("driver-%d", d), Tenant: "c"}
		for range 200 {
			h.c.auditRefused(&auditTag{principal: p, route: "DELETE /v1/queues/{id}", target: "q"}, string(wire.CodeForbidden), http.StatusForbidden)
			h.commit()
		}
	}
	if n := len(h.fx.state.Audit) - before; n != int(refusalsBurst) {
		t.Fatalf("%d entries written for one tenant's 50 drivers, want its one burst of %d", n, int(refusalsBurst))
	}
	// The tenant's own refusals take from the same ration.
	h.c.auditRefused(&auditTag{principal: httpx.Principal{Kind: httpx.KindTenant, Name: "c", Tenant: "c"}, route: "DELETE /v1/queues/{id}", target: "q"}, string(wire.CodeForbidden), http.StatusForbidden)
	h.commit()
	if n := len(h.fx.state.Audit) - before; n != int(refusalsBurst) {
		t.Errorf("the tenant's own refusal was written past its drivers' use of the ration (%d entries)", n)
	}
}
