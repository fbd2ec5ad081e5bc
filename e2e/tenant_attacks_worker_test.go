package e2e

// What one tenant could do to a worker that every tenant shares (issue
// 30): bench it with failing apps, squat the ports others will be given.

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestATenantsFailingAppsDoNotBenchTheWorker: three apps of tenant x that
// run /bin/false used to mark the worker UNHEALTHY within ~12 s, and
// every other tenant's app then waited for an operator's berth worker
// clear. Their own failures now keep them off the worker; tenant y's app
// is placed there and runs.
func TestATenantsFailingAppsDoNotBenchTheWorker(t *testing.T) {
	t.Parallel()
	// As the issue saw it: a TLS cluster (every test cluster is one) whose
	// worker runs each tenant's processes as identities of their own
	// (--run-as needs root; CI runs as root).
	spec := clusterSpec{workers: []string{"w1"}, cores: 4, memory: "1g"}
	if os.Geteuid() == 0 {
		spec.tenantsReach, spec.workerFlags = true, []string{"--run-as", "dynamic"}
	}
	cl := startCluster(t, spec)
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"qx": {}, "qy": {}})
	cx := tenantClient(t, cl.createTenant(led, "x", "qx"), cl.URLs()...)
	cy := tenantClient(t, cl.createTenant(led, "y", "qy"), cl.URLs()...)
	var failing []string
	for i := range 3 {
		id, err := cx.RegisterApp(callCtx(t, 30*time.Second), wire.AppDescription{
			Name:                fmt.Sprintf("false-%d", i),
			Command:             []string{"/bin/false"},
			MaxCores:            1,
			CoresPerExecutor:    1,
			MemoryPerExecutorMB: 64,
			ProcessSpec:         wire.ProcessSpec{Queue: "qx"},
		})
		if err != nil {
			t.Fatal(err)
		}
		followEvents(t, cx, id)
		failing = append(failing, id)
	}
	// Each of the three has failed twice on w1: before, w1 was benched.
	cl.statusWhen(60*time.Second, "three apps of x failed twice each on w1", func(st wire.ClusterStatus) error {
		for _, id := range failing {
			a, ok := appStatus(st, id)
			if !ok {
				return fmt.Errorf("no app %s", id)
			}
			if n := len(executorsIn(a, wire.ExecutorFailed)); n < 2 {
				return fmt.Errorf("%s: %d failed executors", id, n)
			}
		}
		return nil
	})
	app, err := cy.RegisterApp(callCtx(t, 30*time.Second), wire.AppDescription{
		Name:                "bystander",
		Command:             []string{"sleep", "600", cl.marker},
		MaxCores:            1,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
		ProcessSpec:         wire.ProcessSpec{Queue: "qy"},
	})
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cy, app)
	cl.appWhen(app, 20*time.Second, "tenant y's app running on w1", func(a wire.AppStatus) error {
		if len(executorsIn(a, wire.ExecutorRunning)) != 1 {
			return fmt.Errorf("executors %s, waiting %q", describeExecs(a), a.Waiting)
		}
		return nil
	})
	for _, w := range cl.mustStatus().Workers {
		if w.Unhealthy != "" {
			t.Errorf("worker %s unhealthy from another tenant's own failures: %s", w.ID, w.Unhealthy)
		}
	}
}

// TestSquattedPortsAreNotHandedOut: tenant x's process bound 40 ports of
// the worker's range, and the master went on handing them to tenant y's
// executors, which failed "Address already in use". Now the
// worker refuses such a launch and says which ports are held; the
// executor is placed again on a free port, runs, and nothing is charged to
// the app or the worker.
func TestSquattedPortsAreNotHandedOut(t *testing.T) {
	t.Parallel()
	const first, last, squatLast = 19000, 19049, 19039 // below every other test's ranges
	// Two tenants, as the issue saw it, each run as its own identity where
	// the worker can (--run-as needs root; CI runs as root): ports are the
	// host's, whoever holds them.
	spec := clusterSpec{workers: []string{"w1"}, cores: 4, memory: "1g", workerFlags: []string{"--port-range", fmt.Sprintf("%d-%d", first, last)}}
	if os.Geteuid() == 0 {
		spec.tenantsReach, spec.workerFlags = true, append(spec.workerFlags, "--run-as", "dynamic")
	}
	cl := startCluster(t, spec)
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"qx": {}, "qy": {}})
	cx := tenantClient(t, cl.createTenant(led, "x", "qx"), cl.URLs()...)
	cy := tenantClient(t, cl.createTenant(led, "y", "qy"), cl.URLs()...)
	if _, err := cx.RegisterApp(callCtx(t, 30*time.Second), wire.AppDescription{Name: "squatter", Command: []string{healthBin, "--squat", fmt.Sprintf("%d-%d", first, squatLast), cl.marker},
		MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 64, ProcessSpec: wire.ProcessSpec{Queue: "qx"}}); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 20*time.Second, "the squatter holding its ports", func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", squatLast), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	desc := checkedService("victim", 1, []string{cl.marker}, time.Second, time.Second, 3, 0)
	desc.Queue = "qy"
	victim, err := cy.RegisterApp(callCtx(t, 30*time.Second), desc)
	if err != nil {
		t.Fatal(err)
	}
	e := cl.healthyExecutor(victim, 30*time.Second)
	if p := e.Ports["http"]; p <= squatLast || p > last {
		t.Errorf("the victim serves on port %d, want one of %d-%d (the squatter holds %d-%d)", p, squatLast+1, last, first, squatLast)
	}
	a := cl.appWhen(victim, 5*time.Second, "the victim", func(wire.AppStatus) error { return nil })
	if failed := executorsIn(a, wire.ExecutorFailed); len(failed) > 0 || a.RetryCount != 0 || len(a.Excluded) != 0 {
		t.Errorf("the victim was charged for the squatter: failed %+v, retries %d, exclusions %+v", failed, a.RetryCount, a.Excluded)
	}
	for _, x := range executorsIn(a, wire.ExecutorLost) {
		if !strings.Contains(x.Message, "held by another process") {
			t.Errorf("executor %d LOST for %q, want the held ports", x.ID, x.Message)
		}
	}
	if w := cl.mustStatus().Workers[0]; w.Unhealthy != "" {
		t.Errorf("w1 unhealthy: %s", w.Unhealthy)
	}
}
