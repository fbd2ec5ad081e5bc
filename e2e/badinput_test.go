package e2e

// Bad requests to the master's and a worker's API.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// statusSummary is the part of a cluster status that no request may change
// without doing something: what exists and in which state (heartbeat times
// left out).
type statusSummary struct {
	Epoch            uint64
	Workers          []string
	ActiveApps       []string
	CompletedApps    []string
	ActiveDrivers    []string
	CompletedDrivers []string
}

func summarize(st wire.ClusterStatus) statusSummary {
	s := statusSummary{Epoch: st.Epoch}
	for _, w := range st.Workers {
		s.Workers = append(s.Workers, fmt.Sprintf("%s %s %s cores %d/%d mem %d/%d", w.ID, w.Address, w.State, w.CoresUsed, w.Cores, w.MemoryUsedMB, w.MemoryMB))
	}
	app := func(a wire.AppStatus) string {
		limit := "none"
		if a.ExecutorLimit != nil {
			limit = fmt.Sprint(*a.ExecutorLimit)
		}
		return fmt.Sprintf("%s %q %s max %d granted %d limit %s executors %s", a.ID, a.Name, a.State, a.MaxCores, a.CoresGranted, limit, describeExecs(a))
	}
	for _, a := range st.ActiveApps {
		s.ActiveApps = append(s.ActiveApps, app(a))
	}
	for _, a := range st.CompletedApps {
		s.CompletedApps = append(s.CompletedApps, app(a))
	}
	drv := func(d wire.DriverStatus) string {
		return fmt.Sprintf("%s %s on %s %q", d.ID, d.State, d.WorkerID, d.Command)
	}
	for _, d := range st.ActiveDrivers {
		s.ActiveDrivers = append(s.ActiveDrivers, drv(d))
	}
	for _, d := range st.CompletedDrivers {
		s.CompletedDrivers = append(s.CompletedDrivers, drv(d))
	}
	return s
}

// TestBadInputRefusedWithoutSideEffects sends the master and a worker
// requests that are malformed, out of range, about unknown or unsafe ids,
// too large, unauthenticated or with the wrong method. Each must get its
// 4xx with a reason (a JSON error body; 405 names the allowed methods), and
// none may change anything: afterwards the cluster status and the worker's
// state are exactly what they were, no process was started or killed, both
// daemons still run and neither logged a panic.
func TestBadInputRefusedWithoutSideEffects(t *testing.T) {
	t.Parallel()
	appMarker, driverMarker, badMarker := newMarker(t), newMarker(t), newMarker(t)
	cl := daemonCluster(t, nil, 4, "dbad")

	// Something to leave alone: a running app and a running driver.
	appID, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{
		Name: "bystander", Command: sleepArgs(appMarker), MaxCores: 1, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, appID)
	driverID, err := cl.c.SubmitDriver(callCtx(t, 20*time.Second), wire.DriverDescription{Command: sleepArgs(driverMarker), Cores: 1, MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	before := cl.statusWhen(20*time.Second, "app and driver RUNNING", func(st wire.ClusterStatus) error {
		a, _ := appStatus(st, appID)
		if a.State != wire.AppRunning || len(executorsIn(a, wire.ExecutorRunning)) != 1 {
			return fmt.Errorf("app %s with executors %s, want RUNNING with one RUNNING executor", a.State, describeExecs(a))
		}
		if len(st.ActiveDrivers) != 1 || st.ActiveDrivers[0].State != wire.DriverRunning {
			return fmt.Errorf("drivers %+v, want one RUNNING", st.ActiveDrivers)
		}
		if len(pidsOf(appMarker)) != 1 || len(pidsOf(driverMarker)) != 1 {
			return fmt.Errorf("%d executor and %d driver processes, want 1 and 1", len(pidsOf(appMarker)), len(pidsOf(driverMarker)))
		}
		return nil
	})
	livePids := append(pidsOf(appMarker), pidsOf(driverMarker)...)
	worker := before.Workers[0].Address
	workerBefore, err := workerState(worker)
	if err != nil {
		t.Fatal(err)
	}

	const hugeEpoch = 1 << 40 // accepted, it would make the worker refuse its real master
	good := wire.AppDescription{Name: "bad", Command: sleepArgs(badMarker), MaxCores: 1, MemoryPerExecutorMB: 64}
	app := func(edit func(*wire.AppDescription)) []byte {
		d := good
		edit(&d)
		return jsonOf(t, d)
	}
	goodDriver := wire.DriverDescription{Command: sleepArgs(badMarker), Cores: 1, MemoryMB: 64}
	driver := func(edit func(*wire.DriverDescription)) []byte {
		d := goodDriver
		edit(&d)
		return jsonOf(t, d)
	}
	goodLaunch := wire.LaunchExecutor{Epoch: hugeEpoch, MasterURL: cl.master("m1").URL, AppID: "app-bad", ExecutorID: 0, Process: wire.Process{Command: sleepArgs(badMarker), Cores: 1, MemoryMB: 64}}
	launch := func(edit func(*wire.LaunchExecutor)) []byte {
		l := goodLaunch
		edit(&l)
		return jsonOf(t, l)
	}
	big := func(v any) []byte {
		return append(jsonOf(t, v), strings.Repeat(" ", wire.MaxBodyBytes)...)
	}
	esc := url.PathEscape

	const (
		onMaster = false
		onWorker = true
		right    = ""
		none     = "none"
		wrong    = "wrong"
	)
	cases := []struct {
		name   string
		worker bool
		method string
		path   string
		auth   string
		body   []byte
		want   int
	}{
		// Malformed bodies.
		{"app: truncated JSON", onMaster, "POST", "/v1/apps", right, []byte(`{"name":"x","command":["sleep"`), 400},
		{"app: empty body", onMaster, "POST", "/v1/apps", right, []byte{}, 400},
		{"app: two objects", onMaster, "POST", "/v1/apps", right, append(app(func(*wire.AppDescription) {}), app(func(*wire.AppDescription) {})...), 400},
		{"app: unknown field", onMaster, "POST", "/v1/apps", right, []byte(`{"name":"x","command":["sleep","1"],"maxCore":1}`), 400},
		{"app: command is a string", onMaster, "POST", "/v1/apps", right, []byte(`{"name":"x","command":"sleep 1"}`), 400},
		{"app: cores not an integer", onMaster, "POST", "/v1/apps", right, []byte(`{"name":"x","command":["sleep","1"],"maxCores":1e9}`), 400},
		{"driver: truncated JSON", onMaster, "POST", "/v1/drivers", right, []byte(`{"command":[`), 400},
		{"driver: unknown field", onMaster, "POST", "/v1/drivers", right, []byte(`{"command":["sleep","1"],"core":1}`), 400},
		// Empty commands.
		{"app: no command", onMaster, "POST", "/v1/apps", right, []byte(`{"name":"x"}`), 400},
		{"app: empty command", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.Command = []string{} }), 400},
		{"app: empty program", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.Command = []string{"", "x"} }), 400},
		{"app: NUL in an argument", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.Command = []string{"sleep", "1\x002"} }), 400},
		{"app: bad env name", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.Env = map[string]string{"A=B": "c"} }), 400},
		{"driver: empty command", onMaster, "POST", "/v1/drivers", right, driver(func(d *wire.DriverDescription) { d.Command = nil }), 400},
		// Resources out of range.
		{"app: maxCores -1", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.MaxCores = -1 }), 400},
		{"app: maxCores 1e9", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.MaxCores = 1_000_000_000 }), 400},
		{"app: coresPerExecutor > maxCores", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.MaxCores, d.CoresPerExecutor = 2, 4 }), 400},
		{"app: coresPerExecutor -1", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.CoresPerExecutor = -1 }), 400},
		{"app: memory -1", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { d.MemoryPerExecutorMB = -1 }), 400},
		{"app: initial executor limit -1", onMaster, "POST", "/v1/apps", right, app(func(d *wire.AppDescription) { l := -1; d.InitialExecutorLimit = &l }), 400},
		{"driver: cores 100000", onMaster, "POST", "/v1/drivers", right, driver(func(d *wire.DriverDescription) { d.Cores = 100000 }), 400},
		{"driver: cores -1", onMaster, "POST", "/v1/drivers", right, driver(func(d *wire.DriverDescription) { d.Cores = -1 }), 400},
		{"driver: memory -512", onMaster, "POST", "/v1/drivers", right, driver(func(d *wire.DriverDescription) { d.MemoryMB = -512 }), 400},
		{"executor limit -1", onMaster, "PUT", "/v1/apps/" + appID + "/executor-limit", right, []byte(`{"limit":-1}`), 400},
		{"executor limit missing", onMaster, "PUT", "/v1/apps/" + appID + "/executor-limit", right, []byte(`{}`), 400},
		{"executor limit null", onMaster, "PUT", "/v1/apps/" + appID + "/executor-limit", right, []byte(`{"limit":null}`), 400},
		{"executor limit body null", onMaster, "PUT", "/v1/apps/" + appID + "/executor-limit", right, []byte(`null`), 400},
		{"kill executor -1", onMaster, "POST", "/v1/apps/" + appID + "/kill-executors", right, []byte(`{"executorIds":[-1]}`), 400},
		{"executor log: id not a number", onMaster, "GET", "/v1/apps/" + appID + "/executors/abc/logs/stdout", right, nil, 400},
		{"executor log: unknown stream", onMaster, "GET", "/v1/apps/" + appID + "/executors/0/logs/passwd", right, nil, 400},
		{"driver log: negative tail", onMaster, "GET", "/v1/drivers/" + driverID + "/logs/stdout?tail=-1", right, nil, 400},
		// Unknown ids.
		{"unknown app: get", onMaster, "GET", "/v1/apps/app-20000101000000-9999", right, nil, 404},
		{"unknown app: kill", onMaster, "DELETE", "/v1/apps/app-20000101000000-9999", right, nil, 404},
		{"unknown app: unregister", onMaster, "POST", "/v1/apps/app-20000101000000-9999/unregister", right, nil, 404},
		{"unknown app: events", onMaster, "GET", "/v1/apps/app-20000101000000-9999/events", right, nil, 404},
		{"unknown app: executor limit", onMaster, "PUT", "/v1/apps/app-20000101000000-9999/executor-limit", right, []byte(`{"limit":1}`), 404},
		{"unknown executor: log", onMaster, "GET", "/v1/apps/" + appID + "/executors/999/logs/stdout", right, nil, 404},
		{"unknown driver: get", onMaster, "GET", "/v1/drivers/driver-20000101000000-9999", right, nil, 404},
		{"unknown driver: kill", onMaster, "DELETE", "/v1/drivers/driver-20000101000000-9999", right, nil, 404},
		{"unknown driver: log", onMaster, "GET", "/v1/drivers/driver-20000101000000-9999/logs/stdout", right, nil, 404},
		{"unknown worker: heartbeat", onMaster, "POST", "/v1/workers/no-such-worker/heartbeat", right, []byte(`{}`), 200}, // answered with reconnect: checked below
		{"unknown worker: executor state", onMaster, "POST", "/v1/workers/no-such-worker/executor-state", right,
			jsonOf(t, wire.ExecutorStateChanged{AppID: appID, ExecutorID: 0, State: wire.ExecutorFailed}), 404},
		// Unsafe ids.
		{"unsafe app id", onMaster, "GET", "/v1/apps/" + esc("../etc"), right, nil, 400},
		{"unsafe app id: kill", onMaster, "DELETE", "/v1/apps/" + esc("../../etc/passwd"), right, nil, 400},
		{"unsafe driver id: kill", onMaster, "DELETE", "/v1/drivers/%2E%2E", right, nil, 400},
		{"unsafe driver id: log", onMaster, "GET", "/v1/drivers/" + esc("../../etc/passwd") + "/logs/stdout", right, nil, 400},
		{"unsafe worker id: heartbeat", onMaster, "POST", "/v1/workers/" + esc("../x") + "/heartbeat", right, []byte(`{}`), 400},
		{"unsafe worker id: register", onMaster, "POST", "/v1/workers", right,
			jsonOf(t, wire.RegisterWorker{ID: "../evil", Host: "127.0.0.1", Port: 1, Cores: 1, MemoryMB: 1, Address: "http://127.0.0.1:1"}), 400},
		{"worker with 0 cores: register", onMaster, "POST", "/v1/workers", right,
			jsonOf(t, wire.RegisterWorker{ID: "zero", Host: "127.0.0.1", Port: 1, Cores: 0, MemoryMB: 1, Address: "http://127.0.0.1:1"}), 400},
		// Too large.
		{"app: body over 1 MiB", onMaster, "POST", "/v1/apps", right, big(good), 413},
		{"driver: body over 1 MiB", onMaster, "POST", "/v1/drivers", right, big(goodDriver), 413},
		// Authentication.
		{"status without secret", onMaster, "GET", "/v1/cluster", none, nil, 401},
		{"status with wrong secret", onMaster, "GET", "/v1/cluster", wrong, nil, 401},
		{"app with wrong secret", onMaster, "POST", "/v1/apps", wrong, jsonOf(t, good), 401},
		{"driver without secret", onMaster, "POST", "/v1/drivers", none, jsonOf(t, goodDriver), 401},
		{"kill app with wrong secret", onMaster, "DELETE", "/v1/apps/" + appID, wrong, nil, 401},
		{"kill driver without secret", onMaster, "DELETE", "/v1/drivers/" + driverID, none, nil, 401},
		{"register worker with wrong secret", onMaster, "POST", "/v1/workers", wrong,
			jsonOf(t, wire.RegisterWorker{ID: "intruder", Host: "127.0.0.9", Port: 9, Cores: 64, MemoryMB: 1 << 20, Address: "http://127.0.0.9:9"}), 401},
		// Methods.
		{"PUT status", onMaster, "PUT", "/v1/cluster", right, nil, 405},
		{"list apps", onMaster, "GET", "/v1/apps", right, nil, 405},
		{"PATCH app", onMaster, "PATCH", "/v1/apps/" + appID, right, []byte(`{}`), 405},
		{"list drivers", onMaster, "GET", "/v1/drivers", right, nil, 405},

		// The worker's API: every command carries a huge epoch, which a
		// worker must not adopt from a request it refuses.
		{"launch: truncated JSON", onWorker, "POST", "/v1/executors", right, []byte(`{"epoch":1099511627776,"appId":`), 400},
		{"launch: unknown field", onWorker, "POST", "/v1/executors", right, []byte(`{"epoch":1099511627776,"appId":"a","executorId":0,"command":["sleep","1"],"uid":0}`), 400},
		{"launch: empty command", onWorker, "POST", "/v1/executors", right, launch(func(l *wire.LaunchExecutor) { l.Command = nil }), 400},
		{"launch: cores -1", onWorker, "POST", "/v1/executors", right, launch(func(l *wire.LaunchExecutor) { l.Cores = -1 }), 400},
		{"launch: cores 100000", onWorker, "POST", "/v1/executors", right, launch(func(l *wire.LaunchExecutor) { l.Cores = 100000 }), 400},
		{"launch: memory -1", onWorker, "POST", "/v1/executors", right, launch(func(l *wire.LaunchExecutor) { l.MemoryMB = -1 }), 400},
		{"launch: executor id -1", onWorker, "POST", "/v1/executors", right, launch(func(l *wire.LaunchExecutor) { l.ExecutorID = -1 }), 400},
		{"launch: unsafe app id", onWorker, "POST", "/v1/executors", right, launch(func(l *wire.LaunchExecutor) { l.AppID = "../../etc" }), 400},
		{"launch: reserved app id", onWorker, "POST", "/v1/executors", right, launch(func(l *wire.LaunchExecutor) { l.AppID = "drivers" }), 400},
		{"launch driver: unsafe id", onWorker, "POST", "/v1/drivers", right,
			jsonOf(t, wire.LaunchDriver{Epoch: hugeEpoch, DriverID: "../x", Process: wire.Process{Command: sleepArgs(badMarker), Cores: 1, MemoryMB: 64}}), 400},
		{"kill executor: unsafe app id", onWorker, "POST", "/v1/executors/kill", right, jsonOf(t, wire.KillExecutor{Epoch: hugeEpoch, AppID: "..", ExecutorID: 0}), 400},
		{"reconnect: not a URL", onWorker, "POST", "/v1/reconnect", right, jsonOf(t, wire.Reconnect{Epoch: hugeEpoch, Master: "ftp://x"}), 400},
		{"launch: body over 1 MiB", onWorker, "POST", "/v1/executors", right, big(goodLaunch), 413},
		{"unknown executor: kill", onWorker, "POST", "/v1/executors/kill", right,
			jsonOf(t, wire.KillExecutor{Epoch: workerBefore.Epoch, AppID: "app-nope", ExecutorID: 0}), 404},
		{"unsafe app id: log", onWorker, "GET", "/v1/executors/" + esc("../../etc") + "/0/logs/stdout", right, nil, 400},
		{"executor id 007: log", onWorker, "GET", "/v1/executors/" + appID + "/007/logs/stdout", right, nil, 400},
		{"unsafe driver id: log", onWorker, "GET", "/v1/drivers/" + esc("../x") + "/logs/stdout", right, nil, 400},
		{"unknown stream: log", onWorker, "GET", "/v1/drivers/" + driverID + "/logs/passwd", right, nil, 400},
		{"state without secret", onWorker, "GET", "/v1/state", none, nil, 401},
		{"state with wrong secret", onWorker, "GET", "/v1/state", wrong, nil, 401},
		{"launch with wrong secret", onWorker, "POST", "/v1/executors", wrong, launch(func(l *wire.LaunchExecutor) { l.Epoch = workerBefore.Epoch }), 401},
		{"app finished without secret", onWorker, "POST", "/v1/apps/finished", none, jsonOf(t, wire.ApplicationFinished{Epoch: workerBefore.Epoch, AppID: appID}), 401},
		{"GET executors", onWorker, "GET", "/v1/executors", right, nil, 405},
		{"DELETE state", onWorker, "DELETE", "/v1/state", right, nil, 405},
	}
	for _, c := range cases {
		base, where := cl.master("m1").URL, "master"
		if c.worker {
			base, where = worker, "worker"
		}
		key := secret
		switch c.auth {
		case none:
			key = ""
		case wrong:
			key = secret + "-not"
		}
		r, err := call(c.method, base+c.path, key, c.body)
		if err != nil {
			t.Errorf("%s (%s %s on the %s): %v", c.name, c.method, c.path, where, err)
			continue
		}
		if r.status != c.want {
			t.Errorf("%s (%s %s on the %s): %d %s, want %d", c.name, c.method, c.path, where, r.status, strings.TrimSpace(r.body), c.want)
			continue
		}
		switch {
		case c.want == http.StatusOK:
			// An unknown worker's heartbeat is told to register again.
			var hb wire.HeartbeatReply
			if json.Unmarshal([]byte(r.body), &hb) != nil || !hb.Reconnect {
				t.Errorf("%s: answer %s, want reconnect", c.name, r.body)
			}
		case c.want == http.StatusMethodNotAllowed:
			if r.header.Get("Allow") == "" || strings.TrimSpace(r.body) == "" {
				t.Errorf("%s: 405 without Allow header or reason (%q)", c.name, r.body)
			}
		default:
			var e wire.Error
			if json.Unmarshal([]byte(r.body), &e) != nil || e.Error == "" {
				t.Errorf("%s: %d without a JSON reason: %q", c.name, r.status, r.body)
			}
		}
	}

	// A raw ".." in a path never reaches a handler: Go's router answers
	// with a redirect to the cleaned path, which names nothing.
	r, err := call("GET", cl.master("m1").URL+"/v1/apps/../../etc/passwd", secret, nil)
	switch {
	case err != nil:
		t.Errorf("raw ../ path: %v", err)
	case r.status/100 == 4:
	case r.status/100 == 3 && !strings.Contains(r.header.Get("Location"), ".."):
		if r2, err := call("GET", cl.master("m1").URL+r.header.Get("Location"), secret, nil); err != nil || r2.status != http.StatusNotFound {
			t.Errorf("raw ../ path redirects to %s, which answers %d %v; want 404", r.header.Get("Location"), r2.status, err)
		}
	default:
		t.Errorf("raw ../ path: %d %s (Location %q), want a 4xx or a redirect to a clean path", r.status, r.body, r.header.Get("Location"))
	}

	// A tail the master reads (+4 is 4) reaches the worker as it read it:
	// the log's last 4 bytes at most.
	if r, err := call("GET", cl.master("m1").URL+"/v1/drivers/"+driverID+"/logs/stdout?tail=%2B4", secret, nil); err != nil ||
		r.status != http.StatusOK || len(r.body) > 4 {
		t.Errorf("driver log, tail +4: %v %d %q; want 200 and at most 4 bytes", err, r.status, r.body)
	}

	// A good submission under a bad idempotency key is refused as a whole.
	for _, kc := range []struct {
		path string
		body []byte
		keys []string
	}{
		{"/v1/apps", app(func(*wire.AppDescription) {}), []string{"has space"}},
		{"/v1/apps", app(func(*wire.AppDescription) {}), []string{strings.Repeat("k", 129)}},
		{"/v1/drivers", driver(func(*wire.DriverDescription) {}), []string{"a", "b"}},
		{"/v1/drivers", driver(func(*wire.DriverDescription) {}), []string{""}},
	} {
		req, err := http.NewRequest("POST", cl.master("m1").URL+kc.path, bytes.NewReader(kc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		req.Header[wire.IdempotencyKeyHeader] = kc.keys
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Errorf("POST %s with key %q: %v", kc.path, kc.keys, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), wire.IdempotencyKeyHeader) {
			t.Errorf("POST %s with key %q: %d %s, want 400 naming the header", kc.path, kc.keys, resp.StatusCode, body)
		}
	}

	// Nothing changed.
	after := cl.mustStatus()
	if b, a := summarize(before), summarize(after); !reflect.DeepEqual(b, a) {
		t.Errorf("cluster status changed by bad requests:\nbefore %+v\nafter  %+v", b, a)
	}
	workerAfter, err := workerState(worker)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(workerBefore, workerAfter) {
		t.Errorf("worker state changed by bad requests:\nbefore %+v\nafter  %+v", workerBefore, workerAfter)
	}
	testproc.Stable(t, 500*time.Millisecond, "no process started or killed", func() error {
		if pids := pidsOf(badMarker); len(pids) != 0 {
			return fmt.Errorf("a refused request started processes %v", pids)
		}
		if now := append(pidsOf(appMarker), pidsOf(driverMarker)...); !samePids(now, livePids) {
			return fmt.Errorf("running processes changed: %v, were %v", now, livePids)
		}
		return nil
	})
	for _, p := range []*testcluster.Proc{cl.master("m1").Proc(), cl.worker("dbad").Proc} {
		if p.Exited() {
			t.Errorf("%s exited: %v", p.Name, p.Err())
		}
		if logCount(p, `(?i)panic`) > 0 {
			t.Errorf("%s logged a panic", p.Name)
		}
	}
	for _, u := range []string{cl.master("m1").URL, worker} {
		if r, err := call(http.MethodGet, u+"/healthz", "", nil); err != nil || r.status != http.StatusOK {
			t.Errorf("%s/healthz: %d %v", u, r.status, err)
		}
	}
}
