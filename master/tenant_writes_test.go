package master

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Every change a tenant makes is an audit entry on every master, and the
// log keeps the newest 100,000: a tenant setting its app's executor limit
// in a loop pushed everyone else's entries out within minutes. A tenant's
// changes (its drivers' with them) are rationed: beyond 10 s of
// MaxTenantWritesPerSecond at once, a 429 that changes nothing; another
// tenant and the operator are not held back; the ration refills.
func TestATenantsChangesAreRationed(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	app := h.addApp(oneCoreApp("", 0)).rec.ID
	setLimit := func(p httpx.Principal, limit int) error {
		h.c.req = &auditTag{route: "PUT /v1/apps/{id}/executor-limit", target: app, principal: p}
		defer func() { h.c.req = nil }()
		_, err := run(h, func(r reply[wire.ExecutorLimit]) { h.c.setExecutorLimit(app, limit, r) })
		return err
	}
	tenant := httpx.Principal{Kind: httpx.KindTenant, Name: "c", Tenant: "c"}
	driverOfC := httpx.Principal{Kind: httpx.KindDriver, Name: "driver-1", Tenant: "c"}
	rate := DefaultMaxTenantWritesPerSecond
	burst := rate * tenantWriteBurstSeconds
	for i := range burst {
		p := tenant
		if i%2 == 1 {
			p = driverOfC // one ration for a tenant and its drivers
		}
		if err := setLimit(p, 1+i%5); err != nil {
			t.Fatalf("change %d of a burst of %d: %v", i+1, burst, err)
		}
	}
	entries := len(h.fx.state.Audit)
	limit := *h.c.apps[app].rec.ExecutorLimit
	err := setLimit(driverOfC, 9)
	var se *httpx.StatusError
	if statusOf(err) != http.StatusTooManyRequests || !errors.As(err, &se) || se.ErrorCode() != wire.CodeLimitReached || !strings.Contains(err.Error(), "--max-tenant-writes-per-second") {
		t.Fatalf("a change beyond the burst: %v, want 429 limit_reached naming the flag", err)
	}
	if got := *h.c.apps[app].rec.ExecutorLimit; got != limit || len(h.fx.state.Audit) != entries {
		t.Errorf("the refused change changed the limit (%v → %v) or wrote %d entries", limit, got, len(h.fx.state.Audit)-entries)
	}
	if err := setLimit(httpx.Principal{Kind: httpx.KindTenant, Name: "a", Tenant: "a"}, 2); err != nil {
		t.Errorf("another tenant held back: %v", err)
	}
	if err := setLimit(httpx.Principal{Kind: httpx.KindOperator}, 3); err != nil {
		t.Errorf("the operator held back: %v", err)
	}
	h.clock.advance(time.Second)
	for i := range rate {
		if err := setLimit(tenant, 1+i%5); err != nil {
			t.Fatalf("change %d after a second: %v, want %d allowed", i+1, err, rate)
		}
	}
	if err := setLimit(tenant, 4); statusOf(err) != http.StatusTooManyRequests {
		t.Errorf("change %d after a second: %v, want 429", rate+1, err)
	}
}
