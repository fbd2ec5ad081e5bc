package master

import (
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// SPARK-27750: on a 2-core cluster, two 1-core drivers whose apps each
// need a core take every core, and their apps wait for ever: neither
// driver can finish. With --max-drivers 1 the second driver waits (and
// says why), the first's app gets its core and finishes, then the second
// driver runs and its app gets a core too.
func TestMaxDriversLeavesRoomForTheirApps(t *testing.T) {
	scenario := func(maxDrivers int) (*harness, []string) {
		h := newLeader(t, func(c *Config) { c.MaxDrivers = maxDrivers })
		h.addWorker("w1", 2, 4096)
		var ids []string
		for range 2 {
			ids = append(ids, h.addDriver(wire.DriverDescription{Command: []string{"driver"}, Cores: 1, MemoryMB: 256}))
		}
		return h, ids
	}
	running := func(h *harness) int { return h.c.placedDrivers() }
	app := func(h *harness, driver string) *appInfo {
		return h.addApp(wire.AppDescription{Name: "app of " + driver, MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 256})
	}

	// Without the cap: both drivers run, the apps get nothing.
	h, ids := scenario(0)
	if running(h) != 2 {
		t.Fatalf("without --max-drivers: %d drivers running, want 2", running(h))
	}
	if a := app(h, ids[0]); len(a.executors) != 0 {
		t.Fatalf("without --max-drivers an app got %d executors: the scenario does not deadlock", len(a.executors))
	}

	// With --max-drivers 1.
	h, ids = scenario(1)
	if running(h) != 1 {
		t.Fatalf("with --max-drivers 1: %d drivers running", running(h))
	}
	d, _ := h.c.driver(ids[1])
	if d.State != wire.DriverSubmitted || !strings.Contains(d.Waiting, "--max-drivers") {
		t.Errorf("the second driver: %s, waiting %q", d.State, d.Waiting)
	}
	first := app(h, ids[0])
	if len(first.executors) != 1 {
		t.Fatalf("the first driver's app has %d executors, want 1", len(first.executors))
	}
	// The first app and its driver finish; the second driver starts.
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(first.rec.ID, wire.AppFinished, "done", reply) }); err != nil {
		t.Fatal(err)
	}
	_, err := run(h, func(reply reply[wire.None]) {
		h.c.driverStateChanged("w1", wire.DriverStateChanged{DriverID: ids[0], State: wire.DriverFinished, ExitCode: intp(0)}, reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := h.c.driver(ids[1]); d.State != wire.DriverRunning {
		t.Fatalf("the second driver after the first finished: %s (%s)", d.State, d.Waiting)
	}
	if second := app(h, ids[1]); len(second.executors) != 1 {
		t.Errorf("the second driver's app has %d executors, want 1", len(second.executors))
	}
}
