package master

import (
	"net/http"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// A tenant of one queue had to name it on every submission (else 403 for
// default): its only queue, or the default queue it was made with, is
// the queue of a submission that names none.
func TestATenantsSubmissionsGoToItsQueueByDefault(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	for _, q := range []string{"etl", "adhoc"} {
		h.setQueue(q, wire.QueueSpec{})
	}
	for name, spec := range map[string]wire.TenantSpec{
		"one":  {Queues: []string{"etl"}},
		"dflt": {Queues: []string{"etl", "adhoc"}, DefaultQueue: "adhoc"},
		"two":  {Queues: []string{"etl", "adhoc"}},
	} {
		if _, err := run(h, func(r reply[wire.TenantCreated]) { h.c.createTenant(name, spec, r) }); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(tenant string) (string, error) {
		s, err := run(h, func(r reply[wire.Submitted]) { h.c.registerApp(oneCoreApp("", 0), keyed{tenant: tenant}, r) })
		if err != nil {
			return "", err
		}
		return h.c.apps[s.ID].rec.Desc.Queue, nil
	}
	if q, err := submit("one"); err != nil || q != "etl" {
		t.Errorf("a tenant of one queue: %q %v, want etl", q, err)
	}
	if q, err := submit("dflt"); err != nil || q != "adhoc" {
		t.Errorf("a tenant with a default queue: %q %v, want adhoc", q, err)
	}
	if _, err := submit("two"); statusOf(err) != http.StatusForbidden {
		t.Errorf("a tenant of two queues and no default, naming none: %v, want 403 for the default queue", err)
	}
	d, err := run(h, func(r reply[wire.Submitted]) {
		h.c.submitDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64}, keyed{tenant: "one"}, r)
	})
	if err != nil || h.c.drivers[d.ID].rec.Desc.Queue != "etl" {
		t.Errorf("a driver of a tenant of one queue: %v", err)
	}
}
