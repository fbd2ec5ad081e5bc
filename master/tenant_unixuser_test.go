package master

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// A deleted tenant's apps and drivers run on as its Unix user: a tenant
// made with that user while they run could signal them and read their
// environments (issue 30's audit: only live tenants were compared). It is
// refused until they end; then the user is free.
func TestAUnixUserIsNotGivenAgainWhileADeletedTenantsWorkRunsAsIt(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	h.setQueue("etl", wire.QueueSpec{})
	create := func(name string) error {
		_, err := run(h, func(r reply[wire.TenantCreated]) {
			h.c.createTenant(name, wire.TenantSpec{Queues: []string{"etl"}, UnixUser: "team"}, r)
		})
		return err
	}
	if err := create("a"); err != nil {
		t.Fatal(err)
	}
	app, err := run(h, func(r reply[wire.Submitted]) { h.c.registerApp(oneCoreApp("", 0), keyed{tenant: "a"}, r) })
	if err != nil {
		t.Fatal(err)
	}
	drv, err := run(h, func(r reply[wire.Submitted]) {
		h.c.submitDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64}, keyed{tenant: "a"}, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(h, func(r reply[wire.None]) { h.c.deleteTenant("a", r) }); err != nil {
		t.Fatal(err)
	}
	if err := create("c"); statusOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "deleted tenant a") {
		t.Fatalf("a tenant of the Unix user a deleted tenant's app and driver run as: %v, want 409 naming tenant a", err)
	}
	if _, err := run(h, func(r reply[wire.AppStatus]) { h.c.endApp(app.ID, wire.AppKilled, "test", r) }); err != nil {
		t.Fatal(err)
	}
	if err := create("c"); statusOf(err) != http.StatusConflict {
		t.Fatalf("with the deleted tenant's driver still running: %v, want 409", err)
	}
	if _, err := run(h, func(r reply[wire.DriverStatus]) { h.c.killDriver(drv.ID, r) }); err != nil {
		t.Fatal(err)
	}
	if _, err := run(h, func(r reply[wire.None]) { // its worker says it ended
		h.c.driverStateChanged("w1", wire.DriverStateChanged{DriverID: drv.ID, State: wire.DriverKilled}, r)
	}); err != nil {
		t.Fatal(err)
	}
	if err := create("c"); err != nil {
		t.Errorf("once the deleted tenant's work ended, its Unix user is free: %v", err)
	}
}
