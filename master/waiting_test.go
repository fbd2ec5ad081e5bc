package master

import (
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// statusOf reads the leader's cluster status.
func (h *harness) statusOf() *wire.ClusterStatus { return h.c.clusterStatus(false, true) }

func wantWaiting(t *testing.T, what, got string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("%s: waiting %q, want it to say %q", what, got, p)
		}
	}
}

// What waits says why: no worker, a request larger than every worker, a
// request the room is taken for, the executor limit, the core unit.
func TestWaitingSaysWhy(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.MinCoreUnit = 4 })
	submit := func(cores int) string {
		v, err := run(h, func(reply reply[wire.Submitted]) {
			h.c.submitDriver(wire.DriverDescription{Command: []string{"x"}, Cores: cores, MemoryMB: 100}, keyed{}, reply)
		})
		if err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	big := submit(64)
	d, _ := h.c.driver(big)
	wantWaiting(t, "no worker", d.Waiting, "waiting: no worker is alive")

	h.addWorker("w1", 2, 4096)
	d, _ = h.c.driver(big)
	wantWaiting(t, "64 cores on a 2-core cluster", d.Waiting, "cannot start", "no worker has 64 cores", "largest: 2 cores")

	small := submit(2) // takes w1's two cores
	h.commit()
	if d, _ := h.c.driver(small); d.Waiting != "" || d.WorkerID != "w1" {
		t.Fatalf("a driver that fits: waiting %q on %q", d.Waiting, d.WorkerID)
	}
	next := submit(1)
	d, _ = h.c.driver(next)
	wantWaiting(t, "room taken", d.Waiting, "waiting: no worker has 1 free cores", "largest free: 0 cores")

	unit := h.addApp(wire.AppDescription{}) // the core unit 4 on 2-core workers
	a, _ := h.c.app(unit.rec.ID)
	wantWaiting(t, "core unit", a.Waiting, "cannot start: the core unit 4 fits on no worker", "--min-core-unit")

	zero := 0
	limited := h.addApp(wire.AppDescription{CoresPerExecutor: 1, InitialExecutorLimit: &zero})
	a, _ = h.c.app(limited.rec.ID)
	wantWaiting(t, "limit", a.Waiting, "executor limit reached")

	st := h.statusOf()
	if len(st.ActiveApps) != 2 || st.ActiveApps[0].Waiting == "" || len(st.ActiveDrivers) != 3 {
		t.Fatalf("status: %+v", st)
	}
	for _, d := range st.ActiveDrivers {
		if (d.ID == small) != (d.Waiting == "") {
			t.Errorf("driver %s waiting %q in the cluster status", d.ID, d.Waiting)
		}
	}
}

// An app at its executor limit with executors, wanting more cores, says
// that is what holds it; one whose executors hold all it asked for waits
// for nothing.
func TestAppAtItsExecutorLimitSaysSo(t *testing.T) {
	h := newLeader(t, nil, "w1")
	one := 1
	capped := h.addApp(wire.AppDescription{MaxCores: 3, CoresPerExecutor: 1, InitialExecutorLimit: &one})
	a, _ := h.c.app(capped.rec.ID)
	if len(a.Executors) != 1 {
		t.Fatalf("the capped app has %d executors, want 1", len(a.Executors))
	}
	wantWaiting(t, "limit with executors", a.Waiting, "waiting: executor limit reached (1)", "2 more cores wanted")
	uncapped := h.addApp(wire.AppDescription{CoresPerExecutor: 1, InitialExecutorLimit: &one})
	a, _ = h.c.app(uncapped.rec.ID)
	wantWaiting(t, "limit without a core cap", a.Waiting, "waiting: executor limit reached (1); more cores wanted")
	served := h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1})
	if a, _ = h.c.app(served.rec.ID); len(a.Executors) != 1 || a.Waiting != "" {
		t.Errorf("an app with all its cores: %d executors, waiting %q", len(a.Executors), a.Waiting)
	}
}
