package e2e

// Two workers on one host, two tenants (issue 30): each worker handed out
// --run-as dynamic identities from 2,000,000,000 on its own, so tenant
// c's executor on one worker got the uid of tenant a's driver on the
// other, read its /proc/PID/environ (its BERTH_TOKEN) and could signal it.

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

func TestTwoWorkersOfOneHostGiveTwoTenantsTwoIdentities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--run-as needs a root worker (CI runs as root)")
	}
	t.Parallel()
	cl := startCluster(t, clusterSpec{workers: []string{"w1", "w2"}, cores: 2, memory: "2g", tenantsReach: true,
		workerFlags: []string{"--run-as", "dynamic"}})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"qa": {}, "qc": {}})
	ca := tenantClient(t, cl.createTenant(led, "a", "qa"), cl.URLs()...)
	cc := tenantClient(t, cl.createTenant(led, "c", "qc"), cl.URLs()...)

	// Tenant a's driver: the first identity its worker hands out.
	driver, err := ca.SubmitDriver(callCtx(t, 30*time.Second), wire.DriverDescription{
		Cores:       1,
		MemoryMB:    64,
		Command:     []string{"/bin/sh", "-c", "echo pid:$$ uid:$(id -u); exec sleep 600 " + cl.marker},
		ProcessSpec: wire.ProcessSpec{Queue: "qa"},
	})
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`pid:(\d+) uid:(\d+)`)
	var driverPid, driverUID int
	testproc.Eventually(t, 30*time.Second, "tenant a's driver says its pid and uid", func() error {
		data, err := ca.DriverLogLines(callCtx(t, 5*time.Second), driver, wire.LogStdout, 1)
		m := line.FindStringSubmatch(string(data))
		if err != nil || m == nil {
			return fmt.Errorf("%q %v", data, err)
		}
		driverPid, _ = strconv.Atoi(m[1])
		driverUID, _ = strconv.Atoi(m[2])
		return nil
	})

	// Tenant c's executors on both workers (the first identity of the
	// other worker among them) try to read the driver's environment.
	script := fmt.Sprintf("echo uid:$(id -u); cat /proc/%d/environ >/dev/null 2>&1; echo read:$?; kill -0 %d 2>/dev/null; echo signal:$?; exec sleep 600 %s",
		driverPid, driverPid, cl.marker)
	app, err := cc.RegisterApp(callCtx(t, 30*time.Second), wire.AppDescription{
		Name:                "prober",
		Command:             []string{"/bin/sh", "-c", script},
		MaxCores:            3,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
		ProcessSpec:         wire.ProcessSpec{Queue: "qc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cc, app)
	st := cl.statusWhen(30*time.Second, "three executors of c on both workers", func(st wire.ClusterStatus) error {
		a, ok := appStatus(st, app)
		if !ok {
			return fmt.Errorf("no app %s", app)
		}
		on := map[string]bool{}
		for _, e := range executorsIn(a, wire.ExecutorRunning) {
			on[e.WorkerID] = true
		}
		if len(executorsIn(a, wire.ExecutorRunning)) != 3 || len(on) != 2 {
			return fmt.Errorf("%s", describeExecs(a))
		}
		return nil
	})
	a := mustApp(t, st, app)
	uids := map[string]string{}
	for _, e := range a.Executors {
		var out string
		testproc.Eventually(t, 20*time.Second, fmt.Sprintf("executor %d's probe", e.ID), func() error {
			rc, err := cc.ExecutorLogs(callCtx(t, 5*time.Second), app, e.ID, wire.LogStdout, 0)
			if err != nil {
				return err
			}
			defer rc.Close()
			data, err := io.ReadAll(rc)
			out = string(data)
			if err == nil && !strings.Contains(out, "signal:") {
				err = fmt.Errorf("not yet: %q", out)
			}
			return err
		})
		m := regexp.MustCompile(`uid:(\d+)`).FindStringSubmatch(out)
		if m == nil || m[1] == strconv.Itoa(driverUID) {
			t.Errorf("executor %d on %s runs as uid %v, tenant a's driver's (%d)", e.ID, e.WorkerID, m, driverUID)
		}
		if !strings.Contains(out, "read:1") || !strings.Contains(out, "signal:1") {
			t.Errorf("executor %d on %s reached tenant a's driver:\n%s", e.ID, e.WorkerID, out)
		}
		if prev, ok := uids[e.WorkerID]; ok && m != nil && prev != m[1] {
			t.Errorf("executors of one app on %s run as %s and %s: want the app's one identity there", e.WorkerID, prev, m[1])
		}
		if m != nil {
			uids[e.WorkerID] = m[1]
		}
	}
	if uids["w1"] == uids["w2"] {
		t.Errorf("tenant c's app runs as %s on both workers: the workers' ranges are not apart", uids["w1"])
	}
}
