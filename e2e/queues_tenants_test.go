package e2e

// The shared cluster's tenants, end to end: what one tenant's token may
// and may not do to another's work and to the cluster, and a tenant
// deleted while its app runs.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// berthAs runs bin/berth against the cluster's masters with a tenant's
// token (no secret) and returns its output and exit error.
func (cl *cluster) berthAs(token string, args ...string) (string, error) {
	full := append([]string{"--master", strings.Join(cl.URLs(), ","), "--token", token, "--tls-ca-file", bin.PKI.CAFile()}, args...)
	out, err := exec.Command(bin.Berth, full...).CombinedOutput()
	return string(out), err
}

// errorBody decodes an error answer's body.
func errorBody(a answer) wire.Error {
	var e wire.Error
	_ = json.Unmarshal([]byte(a.body), &e)
	return e
}

// TestQueuesTenantIsolation: tenants ta (queue a) and tb (queue b) on one
// worker. With tb's token, every touch of ta's app and driver (read, kill,
// executor limit, kill executors, unregister, logs, events), draining,
// decommissioning or undraining the worker, setting or deleting a queue
// (its own included), creating, listing or deleting tenants and reading
// the audit log is a 403 naming why, through the API and the CLI;
// submitting into ta's queue is a 403 naming it, into an unknown queue a
// 400 naming it. Nothing changed: ta's app and driver run on (same
// process), the worker is ALIVE, the queues and tenants are as they were.
// tb's view of the cluster shows the worker and its own app, not ta's
// app, driver or command; it reads the queues. ta manages its own app and
// driver. The audit log has every write, tb's refusals as refusals.
func TestQueuesTenantIsolation(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{flags: queuesFlags(time.Second, time.Second), workers: []string{"w1"}, cores: 4, memory: "1g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"a": {}, "b": {}})
	taToken, tbToken := cl.createTenant(led, "ta", "a"), cl.createTenant(led, "tb", "b")
	ca, cb := tenantClient(t, taToken, cl.URLs()...), tenantClient(t, tbToken, cl.URLs()...)
	dir := t.TempDir()

	// ta's work: an app, and a driver whose command and environment are
	// its own business.
	private := "ta-private-" + newMarker(t)
	descA := cl.termApp("ta-app", "a", 1, dir, true)
	descA.Env = map[string]string{"TA_PRIVATE": private + "-env"}
	appA, err := ca.RegisterApp(callCtx(t, 30*time.Second), descA)
	if err != nil {
		t.Fatal(err)
	}
	led.tenant("ta", wire.MasterAPI.RegisterApp.Mux(), appA, "ok")
	followEvents(t, ca, appA)
	driverD, err := ca.SubmitDriver(callCtx(t, 30*time.Second), wire.DriverDescription{
		Cores:       1,
		MemoryMB:    64,
		Command:     []string{"sh", "-c", "echo driver up; exec sleep 600 " + strings.TrimPrefix(private, "ta-private-")},
		Env:         map[string]string{"TA_PRIVATE": private + "-driver-env"},
		ProcessSpec: wire.ProcessSpec{Queue: "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	led.tenant("ta", wire.MasterAPI.SubmitDriver.Mux(), driverD, "ok")
	appB, err := cb.RegisterApp(callCtx(t, 30*time.Second), cl.termApp("tb-app", "b", 1, dir, true))
	if err != nil {
		t.Fatal(err)
	}
	led.tenant("tb", wire.MasterAPI.RegisterApp.Mux(), appB, "ok")
	followEvents(t, cb, appB)
	cl.runningApp(appA, 1, 20*time.Second)
	cl.runningApp(appB, 1, 20*time.Second)
	cl.driverWhen(driverD, 20*time.Second, "ta's driver RUNNING", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRunning {
			return fmt.Errorf("state %s", d.State)
		}
		return nil
	})
	pidsBefore := cl.execPids()
	queuesBefore, err := cl.c.Queues(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tenantsBefore, err := cl.c.Tenants(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}

	leader := cl.master("m1").URL
	api := wire.MasterAPI
	for _, c := range []struct {
		route  wire.Endpoint
		path   string
		body   any // nil: none
		target string
	}{
		{api.App.Endpoint, "/v1/apps/" + appA, nil, appA},
		{api.KillApp.Endpoint, "/v1/apps/" + appA, nil, appA},
		{api.SetExecutorLimit.Endpoint, "/v1/apps/" + appA + "/executor-limit", wire.ExecutorLimit{Limit: 0}, appA},
		{api.KillExecutors.Endpoint, "/v1/apps/" + appA + "/kill-executors", wire.KillExecutors{ExecutorIDs: []int{0}}, appA},
		{api.UnregisterApp.Endpoint, "/v1/apps/" + appA + "/unregister", struct{}{}, appA},
		{api.AppHeartbeat.Endpoint, "/v1/apps/" + appA + "/heartbeat", struct{}{}, appA},
		{api.ExecutorLogs.Endpoint, "/v1/apps/" + appA + "/executors/0/logs/stdout", nil, appA},
		{api.AppEvents.Endpoint, "/v1/apps/" + appA + "/events", nil, appA},
		{api.Driver.Endpoint, "/v1/drivers/" + driverD, nil, driverD},
		{api.KillDriver.Endpoint, "/v1/drivers/" + driverD, nil, driverD},
		{api.DriverLogs.Endpoint, "/v1/drivers/" + driverD + "/logs/stdout", nil, driverD},
		{api.Drain.Endpoint, "/v1/workers/w1/drain", wire.DrainRequest{DeadlineSeconds: 60}, "w1"},
		{api.Decommission.Endpoint, "/v1/workers/w1/decommission", struct{}{}, "w1"},
		{api.Undrain.Endpoint, "/v1/workers/w1/undrain", struct{}{}, "w1"},
		{api.PutQueue.Endpoint, "/v1/queues/x", wire.QueueSpec{Weight: weightOf(1)}, "x"},
		{api.PutQueue.Endpoint, "/v1/queues/b", wire.QueueSpec{Weight: weightOf(100)}, "b"},
		{api.DeleteQueue.Endpoint, "/v1/queues/a", nil, "a"},
		{api.CreateTenant.Endpoint, "/v1/tenants/evil", wire.TenantSpec{Queues: []string{"a", "b"}}, "evil"},
		{api.DeleteTenant.Endpoint, "/v1/tenants/ta", nil, "ta"},
		{api.Tenants.Endpoint, "/v1/tenants", nil, ""},
		{api.AuditLog.Endpoint, "/v1/audit", nil, ""},
		{api.Metrics.Endpoint, "/metrics", nil, ""},
	} {
		var body []byte
		if c.body != nil {
			body = jsonOf(t, c.body)
		}
		a, err := call(c.route.Method, leader+c.path, tbToken, body)
		if err != nil {
			t.Fatal(err)
		}
		e := errorBody(a)
		if a.status != http.StatusForbidden || e.Code != wire.CodeForbidden || !strings.Contains(e.Error, "tenant") {
			t.Errorf("tb's token: %s %s: %d %s; want 403 forbidden with a reason naming the tenant", c.route.Method, c.path, a.status, strings.TrimSpace(a.body))
		}
		if c.route.Method != http.MethodGet {
			led.tenant("tb", c.route.Mux(), c.target, string(wire.CodeForbidden))
		}
	}

	// Submitting: into ta's queue, 403 naming it; into no queue at all,
	// 400 naming it.
	for _, c := range []struct {
		route    wire.Endpoint
		body     any
		want     int
		code     wire.ErrorCode
		mentions string
	}{
		{api.RegisterApp.Endpoint, cl.termApp("sneaky", "a", 1, dir, true), http.StatusForbidden, wire.CodeForbidden, "queue a"},
		{api.SubmitDriver.Endpoint, wire.DriverDescription{Cores: 1, MemoryMB: 64, Command: []string{"true"}, ProcessSpec: wire.ProcessSpec{Queue: "a"}}, http.StatusForbidden, wire.CodeForbidden, "queue a"},
		{api.RegisterApp.Endpoint, cl.termApp("lost", "zz", 1, dir, true), http.StatusBadRequest, wire.CodeUnknownQueue, `"zz"`},
	} {
		a, err := call(c.route.Method, leader+c.route.Pattern, tbToken, jsonOf(t, c.body))
		if err != nil {
			t.Fatal(err)
		}
		if e := errorBody(a); a.status != c.want || e.Code != c.code || !strings.Contains(e.Error, c.mentions) {
			t.Errorf("tb submitting %s: %d %s; want %d %s naming %s", c.route.Mux(), a.status, strings.TrimSpace(a.body), c.want, c.code, c.mentions)
		}
		led.tenant("tb", c.route.Mux(), refusedTarget(c.body), string(c.code)) // a refused submission names what it asked for
	}

	// Through the CLI, with --token.
	if out, err := cl.berthAs(tbToken, "queue", "set", "x", "--weight", "1"); err == nil || !strings.Contains(out, "tenant") {
		t.Errorf("berth --token (tb) queue set x: %v\n%s\nwant a failure saying a tenant may not", err, out)
	}
	led.tenant("tb", api.PutQueue.Mux(), "x", string(wire.CodeForbidden))
	if out, err := cl.berthAs(tbToken, "kill", "app", appA); err == nil || !strings.Contains(out, "not tenant tb's") {
		t.Errorf("berth --token (tb) kill app %s: %v\n%s\nwant a failure saying the app is not tb's", appA, err, out)
	}
	led.tenant("tb", api.KillApp.Mux(), appA, string(wire.CodeForbidden))
	if out, err := cl.berthAs(tbToken, "tenant", "create", "evil2", "--queues", "b"); err == nil || !strings.Contains(out, "tenant") {
		t.Errorf("berth --token (tb) tenant create: %v\n%s\nwant a failure saying a tenant may not", err, out)
	}
	led.tenant("tb", api.CreateTenant.Mux(), "evil2", string(wire.CodeForbidden))

	// What tb sees: the worker, the queues and its own app only.
	view, err := call(http.MethodGet, leader+"/v1/cluster", tbToken, nil)
	if err != nil || view.status != http.StatusOK {
		t.Fatalf("tb's GET /v1/cluster: %v %d %s", err, view.status, view.body)
	}
	for _, hidden := range []string{appA, driverD, private} {
		if strings.Contains(view.body, hidden) {
			t.Errorf("tb's view of the cluster shows %q (ta's):\n%s", hidden, view.body)
		}
	}
	var st wire.ClusterStatus
	if err := json.Unmarshal([]byte(view.body), &st); err != nil {
		t.Fatal(err)
	}
	if w, ok := workerIn(st, "w1"); !ok || w.State != wire.WorkerAlive || st.WorkerSummary.Cores != 4 {
		t.Errorf("tb's view of the workers: %+v, summary %+v; want w1 ALIVE, 4 cores", st.Workers, st.WorkerSummary)
	}
	if ids := appIDs(st); !slices.Equal(ids, []string{appB}) || len(st.ActiveDrivers)+len(st.CompletedDrivers) != 0 {
		t.Errorf("tb's view lists apps %v and drivers %v, want its own app %s alone", ids, driverIDs(st), appB)
	}
	if out, err := cl.berthAs(tbToken, "status", "--json"); err != nil || strings.Contains(out, appA) || strings.Contains(out, private) || !strings.Contains(out, appB) {
		t.Errorf("berth --token (tb) status --json: %v; want its app %s and nothing of ta's:\n%s", err, appB, out)
	}
	qs, err := cb.Queues(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("tb's GET /v1/queues: %v", err)
	}
	for _, name := range []string{"a", "b", wire.DefaultQueue} {
		if _, ok := queueIn(qs, name); !ok {
			t.Errorf("tb's GET /v1/queues lacks queue %s: %+v", name, qs.Queues)
		}
	}

	// Nothing changed.
	after := cl.mustStatus()
	if a, _ := appStatus(after, appA); a.State != wire.AppRunning || len(executorsIn(a, wire.ExecutorRunning)) != 1 {
		t.Errorf("ta's app after tb's attempts: %s %s", a.State, describeExecs(a))
	}
	if got := cl.execPids(); !maps.Equal(got, pidsBefore) {
		t.Errorf("executor processes after tb's attempts %v, before %v", got, pidsBefore)
	}
	if d, err := cl.c.Driver(callCtx(t, 10*time.Second), driverD); err != nil || d.State != wire.DriverRunning || d.KillRequested {
		t.Errorf("ta's driver after tb's attempts: %+v %v", d, err)
	}
	if w, _ := workerIn(after, "w1"); w.State != wire.WorkerAlive || w.DrainDeadline != nil {
		t.Errorf("the worker after tb's attempts: %+v", w)
	}
	if qs, err := cl.c.Queues(callCtx(t, 10*time.Second)); err != nil || !maps.Equal(queueSettings(qs), queueSettings(queuesBefore)) {
		t.Errorf("the queues after tb's attempts: %v %v, before %v", queueSettings(qs), err, queueSettings(queuesBefore))
	}
	if ts, err := cl.c.Tenants(callCtx(t, 10*time.Second)); err != nil || fmt.Sprint(ts) != fmt.Sprint(tenantsBefore) {
		t.Errorf("the tenants after tb's attempts: %+v %v, before %+v", ts, err, tenantsBefore)
	}

	// ta manages its own.
	ctx := callCtx(t, 60*time.Second)
	if a, err := ca.App(ctx, appA); err != nil || a.Tenant != "ta" || a.Queue != "a" {
		t.Errorf("ta reading its app: %+v %v", a, err)
	}
	if err := ca.SetExecutorLimit(ctx, appA, 1); err != nil {
		t.Errorf("ta setting its app's executor limit: %v", err)
	}
	led.tenant("ta", api.SetExecutorLimit.Mux(), appA, "ok")
	testproc.Eventually(t, 10*time.Second, "ta reading its executor's log", func() error {
		out, err := ca.ExecutorLogLines(ctx, appA, 0, wire.LogStdout, 5)
		if err == nil && !strings.Contains(string(out), "started 0") {
			err = fmt.Errorf("log %q", out)
		}
		return err
	})
	testproc.Eventually(t, 10*time.Second, "ta reading its driver's log", func() error {
		out, err := ca.DriverLogLines(ctx, driverD, wire.LogStdout, 5)
		if err == nil && !strings.Contains(string(out), "driver up") {
			err = fmt.Errorf("log %q", out)
		}
		return err
	})
	if v, err := ca.Cluster(ctx); err != nil || !slices.Equal(appIDs(v), []string{appA}) || !slices.Equal(driverIDs(v), []string{driverD}) {
		t.Errorf("ta's view: apps %v drivers %v (%v), want its own %s and %s", appIDs(v), driverIDs(v), err, appA, driverD)
	}
	if err := ca.KillExecutors(ctx, appA, []int{0}); err != nil {
		t.Errorf("ta killing its executor: %v", err)
	}
	led.tenant("ta", api.KillExecutors.Mux(), appA, "ok")
	if a, err := ca.KillApp(ctx, appA); err != nil || a.State != wire.AppKilled {
		t.Errorf("ta killing its app: %s %v", a.State, err)
	}
	led.tenant("ta", api.KillApp.Mux(), appA, "ok")
	if _, err := ca.KillDriver(ctx, driverD); err != nil {
		t.Errorf("ta killing its driver: %v", err)
	}
	led.tenant("ta", api.KillDriver.Mux(), driverD, "ok")
	// And tb's app was left alone by all of it.
	if b, _ := appStatus(cl.mustStatus(), appB); b.State != wire.AppRunning || len(executorsIn(b, wire.ExecutorRunning)) != 1 {
		t.Errorf("tb's app: %s %s", b.State, describeExecs(b))
	}

	entries := led.check(t, cl.c, "after the tenants' requests")
	refusal := false
	for _, e := range entries {
		if e.Principal == "tenant:tb" && e.Tenant == "tb" && e.Route == api.KillApp.Mux() && e.Target == appA && e.Outcome == string(wire.CodeForbidden) && e.Status == http.StatusForbidden {
			refusal = true
		}
		if e.Principal == "tenant:tb" && e.Outcome == "ok" {
			if e.Route != api.RegisterApp.Mux() || e.Target != appB {
				t.Errorf("the audit log records a write of tb's that succeeded: %+v", e)
			}
		}
	}
	if !refusal {
		t.Errorf("the audit log has no 403 refusal of tb's kill of %s", appA)
	}
}

// refusedTarget is the audit target of a refused submission: its name, if
// it has one, else the program it would have run.
func refusedTarget(desc any) string {
	var name string
	var argv []string
	switch d := desc.(type) {
	case wire.AppDescription:
		name, argv = d.Name, d.Command
	case wire.DriverDescription:
		name, argv = d.Name, d.Command
	case string: // a raw body
		var n struct {
			Name    string
			Command []string
		}
		_ = json.Unmarshal([]byte(d), &n)
		name, argv = n.Name, n.Command
	}
	switch {
	case name != "":
		return "name:" + name
	case len(argv) > 0 && argv[0] != "":
		return "command:" + argv[0]
	}
	return ""
}
