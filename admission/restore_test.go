package admission

import (
	"strings"
	"testing"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

const goodHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// A crafted snapshot restored with --force put in place what no request
// could have made: a tenant of a queue that does not exist, whose token
// hash is "00" and whose Unix user is root. Each record is now checked as
// the API checked it.
func TestARestoredStateIsCheckedRecordByRecord(t *testing.T) {
	base := func() *persistence.State {
		s := persistence.NewState()
		s.Queues["etl"] = &persistence.QueueRecord{Name: "etl", Weight: 1, Preempt: true}
		s.Tenants["a"] = &persistence.TenantRecord{Name: "a", Queues: []string{"etl"}, TokenHash: goodHash, UnixUser: "team-a"}
		s.Apps["app-1"] = &persistence.AppRecord{ID: "app-1", State: wire.AppWaiting, Desc: wire.AppDescription{Command: []string{"pi"}, ProcessSpec: wire.ProcessSpec{Queue: "etl"}}}
		return s
	}
	if err := RestoredState(base()); err != nil {
		t.Fatalf("a state the API could have made: %v", err)
	}
	ok := base() // a deleted tenant's app, running on as its own user
	ok.Apps["app-2"] = &persistence.AppRecord{ID: "app-2", State: wire.AppRunning, Tenant: "gone", UnixUser: "team-gone",
		Desc: wire.AppDescription{Command: []string{"pi"}, ProcessSpec: wire.ProcessSpec{Queue: "etl"}}}
	ok.Apps["app-1"].Tenant, ok.Apps["app-1"].UnixUser = "a", "team-a"
	if err := RestoredState(ok); err != nil {
		t.Fatalf("apps running as their own tenants' users: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(s *persistence.State)
		want   string
	}{
		{"a tenant of a missing queue", func(s *persistence.State) { s.Tenants["a"].Queues = []string{"gone"} }, `tenant a: queues: no queue "gone"`},
		{"a token hash of 00", func(s *persistence.State) { s.Tenants["a"].TokenHash = "00" }, "tenant a: tokenHash"},
		{"root as a Unix user", func(s *persistence.State) { s.Tenants["a"].UnixUser = "root" }, "tenant a: unixUser root"},
		{"one Unix user for two tenants", func(s *persistence.State) {
			s.Tenants["b"] = &persistence.TenantRecord{Name: "b", Queues: []string{"etl"}, TokenHash: goodHash, UnixUser: "team-a"}
		}, "tenant b: unixUser team-a is tenant a's too"},
		{"a tenant named badly", func(s *persistence.State) {
			s.Tenants["B.x"] = &persistence.TenantRecord{Name: "B.x", Queues: []string{"etl"}, TokenHash: goodHash}
		}, "tenant B.x: tenant"},
		{"a queue of weight 0", func(s *persistence.State) { s.Queues["etl"].Weight = 0 }, "queue etl:"},
		{"a guarantee above a limit", func(s *persistence.State) {
			s.Queues["etl"].Guarantee, s.Queues["etl"].Limit = wire.Amount{Cores: 8}, &wire.Amount{Cores: 4}
		}, "queue etl: queue etl: its guarantee is above its limit"},
		{"an app of a missing queue", func(s *persistence.State) { s.Apps["app-1"].Desc.Queue = "gone" }, `app app-1: queue "gone"`},
		{"an app with no command", func(s *persistence.State) { s.Apps["app-1"].Desc.Command = nil }, "app app-1: command is empty"},
		// An app or driver runs as the Unix user it was submitted with,
		// which no request could make root or another tenant's.
		{"an app running as root", func(s *persistence.State) { s.Apps["app-1"].Tenant, s.Apps["app-1"].UnixUser = "a", "root" }, "app app-1: unixUser: unixUser root"},
		{"an app of another tenant running as tenant a's user", func(s *persistence.State) {
			s.Apps["app-1"].Tenant, s.Apps["app-1"].UnixUser = "gone", "team-a"
		}, "app app-1: unixUser team-a is tenant a's, not tenant gone's"},
		{"a driver running as tenant a's user", func(s *persistence.State) {
			s.Drivers["driver-1"] = &persistence.DriverRecord{ID: "driver-1", State: wire.DriverSubmitted, Tenant: "c", UnixUser: "team-a",
				Desc: wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64}}
		}, "driver driver-1: unixUser team-a is tenant a's, not tenant c's"},
	} {
		s := base()
		c.change(s)
		err := RestoredState(s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it refused with %q", c.name, err, c.want)
		}
	}
}
