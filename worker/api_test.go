package worker

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The worker's API server: its commands and logs behind the secret, and
// what it shows an operator on the same port, its page and its metrics.

func TestSecretIsRequired(t *testing.T) {
	_, w := startParallel(t, nil)
	launch := wire.LaunchExecutor{Epoch: 9, AppID: "app-1", ExecutorID: 0, Process: wire.Process{Command: helperCmd(t, "sleep"), Env: helperEnvMap, Cores: 1}}
	for _, secret := range []string{"", "wrong", testSecret + "x"} {
		for _, c := range []struct{ method, path string }{
			{"POST", "/v1/executors"}, {"POST", "/v1/reconnect"}, {"GET", "/v1/state"},
			{"GET", "/v1/executors/app-1/0/logs/stdout"},
		} {
			if code, _ := callWith(t, secret, c.method, w.URL()+c.path, launch); code != 401 {
				t.Errorf("%s %s with secret %q: %d, want 401", c.method, c.path, secret, code)
			}
		}
	}
	if code, body := callWith(t, "", "GET", w.URL()+"/healthz", nil); code != 200 {
		t.Errorf("/healthz without the secret: %d %s", code, body)
	}
	st := w.state()
	if len(st.Executors) != 0 || st.Epoch != 5 {
		t.Errorf("refused requests changed the state: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(w.Config().WorkDir, "app-1")); !os.IsNotExist(err) {
		t.Errorf("refused launch created a directory: %v", err)
	}
}

func TestBadCommandsAreRefused(t *testing.T) {
	fm, w := startParallel(t, nil)
	cmd := []string{"/bin/true"}
	exec := func(mod func(*wire.LaunchExecutor)) wire.LaunchExecutor {
		l := wire.LaunchExecutor{Epoch: 5, AppID: "app-1", ExecutorID: 0, Process: wire.Process{Command: cmd, Cores: 1, MemoryMB: 10}}
		mod(&l)
		return l
	}
	drv := func(mod func(*wire.LaunchDriver)) wire.LaunchDriver {
		l := wire.LaunchDriver{Epoch: 5, DriverID: "driver-1", Process: wire.Process{Command: cmd, Cores: 1, MemoryMB: 10}}
		mod(&l)
		return l
	}
	cases := []struct {
		path string
		body any
		want string // in the reason
	}{
		{"/v1/executors", `{"epoch":5,"appId":`, "malformed JSON"},
		{"/v1/executors", ``, "empty"},
		{"/v1/executors", `{"epoch":5,"appId":"a","executorId":0,"cores":1,"command":["x"],"shell":true}`, "unknown field"},
		{"/v1/executors", `{"epoch":"5"}`, "malformed JSON"},
		{"/v1/executors", `[]`, "malformed JSON"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.Command = nil }), "command is empty"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.Command = []string{""} }), "program, is empty"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.Command = []string{"a", "b\x00c"} }), "NUL"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.Command = make([]string, wire.MaxCommandArgs+1) }), "arguments"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.Cores = -1 }), "cores -1"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.Cores = wire.MaxCores + 1 }), "cores"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.MemoryMB = -5 }), "memoryMB -5"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.ExecutorID = -1 }), "negative"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.AppID = "" }), "appId is empty"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.AppID = "../../etc" }), "appId"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.AppID = "a/b" }), "appId"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.AppID = "a..b" }), ".."},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.AppID = ".hidden" }), "appId"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.AppID = "app 1" }), "appId"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.AppID = "drivers" }), "reserved"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.AppID = strings.Repeat("a", 201) }), "longer"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.Env = map[string]string{"A=B": "c"} }), "env name"},
		{"/v1/executors", exec(func(l *wire.LaunchExecutor) { l.Env = map[string]string{"": "c"} }), "env name"},
		{"/v1/drivers", drv(func(l *wire.LaunchDriver) { l.DriverID = ".." }), "driverId"},
		{"/v1/drivers", drv(func(l *wire.LaunchDriver) { l.DriverID = "x/y" }), "driverId"},
		{"/v1/drivers", drv(func(l *wire.LaunchDriver) { l.Command = []string{} }), "command is empty"},
		{"/v1/drivers", drv(func(l *wire.LaunchDriver) { l.Cores = -2 }), "cores"},
		{"/v1/drivers", `{"epoch":5}`, "driverId is empty"},
		{"/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "../x"}, "appId"},
		{"/v1/executors/kill", `{"epoch":5,"appId":"a","executorId":"0"}`, "malformed"},
		{"/v1/drivers/kill", wire.KillDriver{Epoch: 5, DriverID: ""}, "driverId"},
		{"/v1/apps/finished", wire.ApplicationFinished{Epoch: 5, AppID: "a/../b"}, "appId"},
		{"/v1/reconnect", wire.Reconnect{Epoch: 5, Master: "not a url"}, "master"},
	}
	for _, c := range cases {
		code, body := w.call("POST", c.path, c.body)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s %.80v: %d %s, want 400 with %q", c.path, c.body, code, body, c.want)
		}
	}
	st := w.state()
	if len(st.Executors) != 0 || len(st.Drivers) != 0 || st.Epoch != 5 || st.Master != fm.URL() {
		t.Errorf("refused commands changed the state: %+v", st)
	}
	entries, _ := os.ReadDir(w.Config().WorkDir)
	if len(entries) != 0 {
		t.Errorf("refused commands created %v", entries)
	}
	if n := fm.count("register"); n != 1 {
		t.Errorf("%d registrations: a refused reconnect acted", n)
	}
}

func TestLoopbackOnlyWithoutSecret(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Masters: []string{"http://127.0.0.1:7077"}, Host: "0.0.0.0", WorkDir: t.TempDir(), HostDir: t.TempDir()}, nil)
	if err == nil || !strings.Contains(err.Error(), "--host") {
		t.Errorf("0.0.0.0 without a secret: %v", err)
	}
	if _, err := New(Config{Masters: []string{"http://127.0.0.1:7077"}, Host: "0.0.0.0", Secret: "s", WorkDir: t.TempDir(), HostDir: t.TempDir()}, nil); err != nil {
		t.Error(err)
	}
}

// Two workers with default ports and ids on one host.
func TestTwoWorkersOnOneHost(t *testing.T) {
	t.Parallel()
	fm := newFakeMaster(t)
	dir := t.TempDir()
	a := startWorker(t, []string{fm.URL()}, func(c *Config) { c.WorkDir = dir })
	b := startWorker(t, []string{fm.URL()}, func(c *Config) { c.WorkDir = dir })
	if a.ID() == b.ID() || a.URL() == b.URL() {
		t.Errorf("same id or address: %s %s, %s %s", a.ID(), a.URL(), b.ID(), b.URL())
	}
	testproc.Eventually(t, 10*time.Second, "both registered", func() bool { return fm.count("state") >= 2 })
}

// The worker's page lists what it runs, with each process's pid, and says
// what it offers and how it enforces limits, behind the sign-in: with a
// secret, a page without a session goes to the sign-in.
func TestWorkerPageListsItsProcesses(t *testing.T) {
	_, tw := startParallel(t, func(c *Config) { c.Resources = map[string][]string{"gpu": {"0", "1"}} })
	pid := tw.runSleeper("app-ui", 3)
	tw.mustCall(200, "POST", "/v1/executors", wire.LaunchExecutor{Epoch: 5, AppID: "app-gpu", ExecutorID: 0,
		Process: wire.Process{Command: helperCmd(t, "sleep"), Env: helperEnvMap, Cores: 1, MemoryMB: 64,
			Resources: wire.ResourceGrants{"gpu": {Addresses: []string{"1"}, Share: 0.5}}}})
	tw.runningPid("app-gpu", 0)
	code, body := tw.call(http.MethodGet, "/ui/", nil)
	if code != http.StatusOK {
		t.Fatalf("the page: %d", code)
	}
	if tw.limits == "" {
		t.Fatal("the worker says nothing of its limits")
	}
	for _, want := range []string{"Worker " + tw.ID(), "app-ui/3", fmt.Sprint(pid), "RUNNING", "gpu 0, 1", "limits: " + tw.limits,
		"<td>app-gpu/0</td><td>1</td><td>64 MiB</td><td>gpu=1(0.5)</td>", "<td>app-ui/3</td><td>1</td><td>256 MiB</td><td>-</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, tw.URL()+"/ui/", nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/ui/sign-in") {
		t.Errorf("a page without a session: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// The worker's metrics follow what it runs: a launch, a live process by
// kind and state, its end by state.
func TestWorkerMetricsFollowItsProcesses(t *testing.T) {
	_, tw := startParallel(t, nil)
	scrape := func() func(string, ...string) float64 {
		f := testproc.Scrape(t, tw.URL()+"/metrics", testSecret)
		return func(name string, labels ...string) float64 { return testproc.Value(f, name, labels...) }
	}
	tw.runSleeper("app-m", 0)
	m := scrape()
	if m("berth_worker_launches_total", "kind", "executor") != 1 || m("berth_worker_processes", "kind", "executor", "state", "RUNNING") != 1 {
		t.Errorf("after a launch: launches %v, running %v", m("berth_worker_launches_total", "kind", "executor"), m("berth_worker_processes", "kind", "executor", "state", "RUNNING"))
	}
	if m("berth_worker_cleanup_sweeps_total") < 1 {
		t.Errorf("cleanup sweeps %v: the first runs at start", m("berth_worker_cleanup_sweeps_total"))
	}
	tw.mustCall(http.StatusOK, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-m", ExecutorID: 0})
	// One scrape is no snapshot: the registry runs its collectors at once,
	// so the process table's gauge may be read before the process ended
	// and the exit counter after (the test failed 1 run in about 10 on 2
	// loaded cores when it read the gauge at the count's first sight):
	// both must come.
	testproc.Eventually(t, 10*time.Second, "the kill counted, and no executor running", func() bool {
		m = scrape()
		return m("berth_worker_exits_total", "kind", "executor", "state", "KILLED") == 1 &&
			m("berth_worker_processes", "kind", "executor", "state", "RUNNING") == 0
	})
	if v := m("berth_worker_processes", "kind", "driver", "state", "RUNNING"); v != 0 {
		t.Errorf("running drivers on a worker that never ran one: %v, want 0 (-1: absent)", v)
	}
	req, _ := http.NewRequest(http.MethodGet, tw.URL()+"/metrics", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without the secret: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}
