package e2e

// The audit log of the shared cluster, end to end.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestQueuesAuditLog: the operator (with the secret, through the API and
// the CLI), two tenants (with their tokens, through the API and the CLI)
// and a driver of tenant ta (with the credential its worker gave it,
// running bin/berth run) make writes, some refused. GET /v1/audit lists
// each with its principal ("secret", "tenant:NAME", "driver:ID"), the
// tenant it acts for, its route, target and outcome ("ok" with a 2xx, a
// refusal's code with its status), oldest first, timed within the test;
// no read is listed; ?tenant= keeps a tenant's own requests and its
// driver's, ?since= the recent ones, a bad since is a 400; berth audit
// --tenant --json says what the API does. The driver's app runs in the
// driver's queue, as ta's.
func TestQueuesAuditLog(t *testing.T) {
	t.Parallel()
	start := time.Now()
	cl := startCluster(t, clusterSpec{flags: queuesFlags(time.Second, time.Second), workers: []string{"w1"}, cores: 4, memory: "1g"})
	led := &auditLedger{}
	api := wire.MasterAPI
	cl.setQueues(led, map[string]wire.QueueSpec{"a": {}, "b": {Weight: weightOf(2)}, "tmp": {}})
	cl.setQueues(led, map[string]wire.QueueSpec{"b": {Weight: weightOf(3)}})
	if err := cl.c.DeleteQueue(callCtx(t, 30*time.Second), "tmp"); err != nil {
		t.Fatal(err)
	}
	led.operator(api.DeleteQueue.Mux(), "tmp")
	ca := tenantClient(t, cl.createTenant(led, "ta", "a"), cl.URLs()...)
	tbToken := cl.createTenant(led, "tb", "b")
	cb := tenantClient(t, tbToken, cl.URLs()...)

	// The CLI as the operator: a tenant made and deleted.
	out, err := cl.berthCLI("tenant", "create", "tc", "--queues", "b")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || !strings.HasPrefix(lines[len(lines)-1], wire.TenantTokenPrefix+"tc.") {
		t.Fatalf("berth tenant create tc: %v\n%s\nwant its token alone on the last line", err, out)
	}
	led.operator(api.CreateTenant.Mux(), "tc")
	if out, err := cl.berthCLI("tenant", "delete", "tc"); err != nil {
		t.Fatalf("berth tenant delete tc: %v\n%s", err, out)
	}
	led.operator(api.DeleteTenant.Mux(), "tc")

	// ta's driver registers an app with its own credential: the app is
	// ta's, in the driver's queue.
	marker := newMarker(t)
	driver, err := ca.SubmitDriver(callCtx(t, 30*time.Second), wire.DriverDescription{
		Cores:    1,
		MemoryMB: 64,
		Command: []string{bin.Berth, "run", "--name", "from-driver", "--max-cores", "1", "--cores-per-executor", "1",
			"--executor-memory", "64m", "--", "sleep", "600", marker},
		ProcessSpec: wire.ProcessSpec{Queue: "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	led.tenant("ta", api.SubmitDriver.Mux(), driver, "ok")
	var fromDriver wire.AppStatus
	cl.statusWhen(30*time.Second, "the driver's app RUNNING", func(st wire.ClusterStatus) error {
		for _, a := range st.ActiveApps {
			if a.Name == "from-driver" && len(executorsIn(a, wire.ExecutorRunning)) == 1 {
				fromDriver = a
				return nil
			}
		}
		d, _ := cl.c.Driver(callCtx(t, 5*time.Second), driver)
		return fmt.Errorf("apps %v; driver %s %q", appIDs(st), d.State, d.Message)
	})
	if fromDriver.Queue != "a" || fromDriver.Tenant != "ta" {
		t.Errorf("the driver's app: queue %q tenant %q, want a and ta (its driver's)", fromDriver.Queue, fromDriver.Tenant)
	}
	led.add("driver:"+driver, "ta", api.RegisterApp.Mux(), fromDriver.ID, "ok")

	// tb: its app, then refusals through the API and the CLI.
	appB, err := cb.RegisterApp(callCtx(t, 30*time.Second), cl.termApp("tb-app", "b", 1, t.TempDir(), true))
	if err != nil {
		t.Fatal(err)
	}
	led.tenant("tb", api.RegisterApp.Mux(), appB, "ok")
	followEvents(t, cb, appB)
	leader := cl.master("m1").URL
	if a, _ := call(http.MethodDelete, leader+"/v1/apps/"+fromDriver.ID, tbToken, nil); a.status != http.StatusForbidden {
		t.Errorf("tb killing ta's app: %d %s", a.status, a.body)
	}
	led.tenant("tb", api.KillApp.Mux(), fromDriver.ID, string(wire.CodeForbidden))
	if a, _ := call(http.MethodPut, leader+"/v1/queues/b", tbToken, jsonOf(t, wire.QueueSpec{Weight: weightOf(9)})); a.status != http.StatusForbidden {
		t.Errorf("tb setting its queue's weight: %d %s", a.status, a.body)
	}
	led.tenant("tb", api.PutQueue.Mux(), "b", string(wire.CodeForbidden))
	if out, err := cl.berthAs(tbToken, "kill", "driver", driver); err == nil {
		t.Errorf("berth --token (tb) kill driver %s: succeeded\n%s", driver, out)
	}
	led.tenant("tb", api.KillDriver.Mux(), driver, string(wire.CodeForbidden))
	// Reads are not audited.
	for _, path := range []string{"/v1/queues", "/v1/cluster", "/v1/apps/" + appB} {
		if a, err := call(http.MethodGet, leader+path, tbToken, nil); err != nil || a.status != http.StatusOK {
			t.Errorf("tb's GET %s: %v %d %s", path, err, a.status, a.body)
		}
	}
	if _, err := ca.KillDriver(callCtx(t, 30*time.Second), driver); err != nil {
		t.Fatal(err)
	}
	led.tenant("ta", api.KillDriver.Mux(), driver, "ok")
	if _, err := cl.c.KillApp(callCtx(t, 30*time.Second), appB); err != nil {
		t.Fatal(err)
	}
	led.operator(api.KillApp.Mux(), appB)

	entries := led.check(t, cl.c, "the audit log")
	end := time.Now()
	for i, e := range entries {
		switch {
		case strings.HasPrefix(e.Route, "GET "):
			t.Errorf("a read in the audit log: %+v", e)
		case e.Time.Before(start.Add(-time.Second)) || e.Time.After(end.Add(time.Second)):
			t.Errorf("entry %+v timed outside the test (%s to %s)", e, start, end)
		case i > 0 && e.Time.Before(entries[i-1].Time):
			t.Errorf("entry %d %+v before entry %d %+v: want oldest first", i, e, i-1, entries[i-1])
		case e.Outcome == "ok" && e.Status/100 != 2, e.Outcome == string(wire.CodeForbidden) && e.Status != http.StatusForbidden:
			t.Errorf("entry %+v: outcome and status disagree", e)
		}
	}

	// The filters, through the API and the CLI.
	for _, tenant := range []string{"ta", "tb"} {
		got, err := cl.c.Audit(callCtx(t, 10*time.Second), 0, tenant)
		if err != nil {
			t.Fatal(err)
		}
		mine := &auditLedger{}
		for _, w := range led.want {
			if w.Tenant == tenant {
				mine.add(w.Principal, w.Tenant, w.Route, w.Target, w.Outcome)
			}
		}
		if lacking, _ := mine.missing(got.Entries); len(lacking) > 0 {
			t.Errorf("GET /v1/audit?tenant=%s lacks %+v", tenant, lacking)
		}
		for _, e := range got.Entries {
			if e.Tenant != tenant {
				t.Errorf("GET /v1/audit?tenant=%s lists %+v", tenant, e)
			}
		}
		out, err := cl.berthCLI("audit", "--tenant", tenant, "--json")
		var viaCLI wire.Audit
		// The CLI asks after the API: it may see later entries too.
		if err != nil || json.Unmarshal([]byte(out), &viaCLI) != nil || len(viaCLI.Entries) < len(got.Entries) ||
			fmt.Sprint(viaCLI.Entries[:len(got.Entries)]) != fmt.Sprint(got.Entries) {
			t.Errorf("berth audit --tenant %s --json: %v\n%s\nwant what the API gave before:\n%s", tenant, err, out, describeAudit(got.Entries))
		}
	}
	// ?since=1h keeps everything so far (the writes after the snapshot
	// above too: the driver's berth run unregistering its app as it ends,
	// the worker's reports).
	if recent, err := cl.c.Audit(callCtx(t, 10*time.Second), time.Hour, ""); err != nil || len(recent.Entries) < len(entries) ||
		fmt.Sprint(recent.Entries[:len(entries)]) != fmt.Sprint(entries) {
		t.Errorf("GET /v1/audit?since=1h: %v\n%s\nwant what GET /v1/audit gave before, then any later entries:\n%s", err, describeAudit(recent.Entries), describeAudit(entries))
	}
	testproc.Eventually(t, 5*time.Second, "?since=1ms to leave the older entries out", func() error {
		recent, err := cl.c.Audit(callCtx(t, 10*time.Second), time.Millisecond, "")
		if err == nil && len(recent.Entries) >= len(entries) {
			err = fmt.Errorf("%d entries of %d", len(recent.Entries), len(entries))
		}
		return err
	})
	if a, err := call(http.MethodGet, leader+"/v1/audit?since=yesterday", secret, nil); err != nil || a.status != http.StatusBadRequest || !strings.Contains(a.body, "since") {
		t.Errorf("GET /v1/audit?since=yesterday: %v %d %s, want 400 naming since", err, a.status, a.body)
	}
	if out, err := cl.berthCLI("audit"); err != nil || !strings.Contains(out, "tenant:tb") || !strings.Contains(out, "forbidden (403)") || !strings.Contains(out, "driver:"+driver) {
		t.Errorf("berth audit: %v\n%s\nwant tb's refusals and ta's driver", err, out)
	}
}
