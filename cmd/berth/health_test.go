package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// sent decodes, strictly, the body of the one request to path the master
// got, failing the test without one.
func sent[T any](t *testing.T, f *sharedMaster, path string) T {
	t.Helper()
	var v T
	var bodies []string
	for _, c := range f.requests() {
		if c.Method == "POST" && c.URI == path {
			bodies = append(bodies, c.Body)
		}
	}
	if len(bodies) != 1 {
		t.Fatalf("%d requests POST %s, want 1: %+v", len(bodies), path, f.requests())
	}
	dec := json.NewDecoder(strings.NewReader(bodies[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("POST %s sent %s: %v", path, bodies[0], err)
	}
	return v
}

func durp(d time.Duration) *wire.Duration { v := wire.Duration(d); return &v }
func intp(n int) *int                     { return &n }

// The health flags every one, as berth run and berth submit send them.
var healthArgs = []string{
	"--port", "http", "--port", "admin",
	"--check-http", "http:/health", "--check-http", "http:/ready?a=1,b=2", "--check-tcp", "admin",
	"--check-exec", `sh -c 'test -n "$BERTH_PORT_HTTP"' "two words" it\'s`,
	"--check-interval", "5s", "--check-timeout", "1s", "--check-failures", "4", "--check-start-period", "30s",
	"--restart-attempts", "3", "--restart-interval", "10m", "--restart-delay", "5s", "--restart-mode", "delay",
}

// What healthArgs make: the checks named after their type and label, a
// name taken twice numbered, the timing on every check.
func wantHealth() ([]string, []wire.Check, *wire.RestartPolicy) {
	timed := func(c wire.Check) wire.Check {
		c.Interval, c.Timeout, c.Failures, c.StartPeriod = durp(5*time.Second), durp(time.Second), intp(4), durp(30*time.Second)
		return c
	}
	return []string{"http", "admin"},
		[]wire.Check{
			timed(wire.Check{Name: "http-http", Type: wire.CheckHTTP, Port: "http", Path: "/health"}),
			timed(wire.Check{Name: "http-http-2", Type: wire.CheckHTTP, Port: "http", Path: "/ready?a=1,b=2"}),
			timed(wire.Check{Name: "tcp-admin", Type: wire.CheckTCP, Port: "admin"}),
			timed(wire.Check{Name: "exec", Type: wire.CheckExec, Command: []string{"sh", "-c", `test -n "$BERTH_PORT_HTTP"`, "two words", "it's"}}),
		},
		&wire.RestartPolicy{Attempts: intp(3), Interval: durp(10 * time.Minute), Delay: durp(5 * time.Second), Mode: wire.RestartDelay}
}

func TestRunAndSubmitHealthFlags(t *testing.T) {
	ports, checks, restart := wantHealth()

	f := newSharedMaster(t, testSecret)
	res := berth(t, f.env(), append(append([]string{"run"}, healthArgs...), "--", "/opt/svc", "{{PORT_HTTP}}")...)
	if res.Code != 0 {
		t.Fatalf("run: %+v", res)
	}
	app := sent[wire.AppDescription](t, f, "/v1/apps")
	want := wire.AppDescription{
		Name:                "svc",
		Command:             []string{"/opt/svc", "{{PORT_HTTP}}"},
		MemoryPerExecutorMB: 1024,
		ProcessSpec:         wire.ProcessSpec{Ports: ports, Checks: checks, Restart: restart},
	}
	if !reflect.DeepEqual(app, want) {
		t.Errorf("run sent\n%s\nwant\n%s", mustJSON(t, app), mustJSON(t, want))
	}

	f = newSharedMaster(t, testSecret)
	res = berth(t, f.env(), append(append([]string{"submit", "--supervise"}, healthArgs...), "--", "/opt/drv")...)
	if res.Code != 0 {
		t.Fatalf("submit: %+v", res)
	}
	drv := sent[wire.DriverDescription](t, f, "/v1/drivers")
	wantDrv := wire.DriverDescription{
		Name:        "drv",
		Command:     []string{"/opt/drv"},
		Cores:       1,
		MemoryMB:    512,
		Supervise:   true,
		ProcessSpec: wire.ProcessSpec{Ports: ports, Checks: checks, Restart: restart},
	}
	if !reflect.DeepEqual(drv, wantDrv) {
		t.Errorf("submit sent\n%s\nwant\n%s", mustJSON(t, drv), mustJSON(t, wantDrv))
	}
}

// The check flags' environment variables: one value each, which the
// command line replaces.
func TestHealthFlagsFromEnv(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	env := append(f.env(), "BERTH_SUBMIT_PORT=http,admin", "BERTH_SUBMIT_CHECK_HTTP=http:/a,b", "BERTH_SUBMIT_CHECK_EXEC=/bin/check one,two",
		"BERTH_SUBMIT_RESTART_MODE=delay")
	if res := berth(t, env, "submit", "--check-exec", "/bin/other", "--", "/opt/drv"); res.Code != 0 {
		t.Fatalf("submit: %+v", res)
	}
	d := sent[wire.DriverDescription](t, f, "/v1/drivers")
	want := []wire.Check{
		{Name: "http-http", Type: wire.CheckHTTP, Port: "http", Path: "/a,b"},
		{Name: "exec", Type: wire.CheckExec, Command: []string{"/bin/other"}},
	}
	if !reflect.DeepEqual(d.Ports, []string{"http", "admin"}) || !reflect.DeepEqual(d.Checks, want) ||
		d.Restart == nil || d.Restart.Mode != wire.RestartDelay {
		t.Fatalf("submit sent %s", mustJSON(t, d))
	}
}

func writeSpec(t *testing.T, spec string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// --file gives the whole description; the flags given override its
// fields (maps merged by key), their defaults fill what it leaves out, and
// what no flag sets (constraints, gang) goes as the file says.
func TestFileWithFlagsOverriding(t *testing.T) {
	app := writeSpec(t, `{
  "name": "web", "command": ["/opt/web", "--port", "{{PORT_HTTP}}"], "env": {"A": "1", "B": "1"},
  "maxCores": 8, "queue": "etl", "priority": 3,
  "ports": ["http", "admin"],
  "checks": [{"name": "web", "type": "http", "port": "http", "path": "/health", "interval": "5s", "timeout": "1s"}],
  "restart": {"attempts": 2, "interval": "1m", "mode": "fail"},
  "constraints": [{"label": "zone", "in": ["a"]}], "gang": 2
}`)
	f := newSharedMaster(t, testSecret)
	res := berth(t, f.env(), "run", "--file", app, "--env", "B=2", "--max-cores", "4", "--restart-mode", "delay",
		"--check-failures", "5")
	if res.Code != 0 {
		t.Fatalf("run --file: %+v", res)
	}
	got := sent[wire.AppDescription](t, f, "/v1/apps")
	want := wire.AppDescription{
		Name:                "web",
		Command:             []string{"/opt/web", "--port", "{{PORT_HTTP}}"},
		Env:                 map[string]string{"A": "1", "B": "2"},
		MaxCores:            4,
		MemoryPerExecutorMB: 1024,
		Gang:                2,
		ProcessSpec: wire.ProcessSpec{Queue: "etl", Priority: 3, Ports: []string{"http", "admin"}, Checks: []wire.Check{{Name: "web", Type: wire.CheckHTTP, Port: "http", Path: "/health", Interval: durp(5 * time.Second),
			Timeout: durp(time.Second), Failures: intp(5)}}, Restart: &wire.RestartPolicy{Attempts: intp(2), Interval: durp(time.Minute), Mode: wire.RestartDelay}, Constraints: []wire.Constraint{{Label: "zone", In: []string{"a"}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run --file sent\n%s\nwant\n%s", mustJSON(t, got), mustJSON(t, want))
	}

	// Check flags replace the file's checks, --port its ports, ARGV its
	// command; submit reads a DriverDescription.
	drv := writeSpec(t, `{"command": ["/opt/old"], "cores": 2, "supervise": true, "ports": ["http"],
  "checks": [{"name": "old", "type": "tcp", "port": "http"}]}`)
	f = newSharedMaster(t, testSecret)
	res = berth(t, f.env(), "submit", "--file", drv, "--port", "admin", "--check-tcp", "admin", "--memory", "1g", "--", "/opt/new", "x")
	if res.Code != 0 {
		t.Fatalf("submit --file: %+v", res)
	}
	gotDrv := sent[wire.DriverDescription](t, f, "/v1/drivers")
	wantDrv := wire.DriverDescription{
		Name:        "new",
		Command:     []string{"/opt/new", "x"},
		Cores:       2,
		MemoryMB:    1024,
		Supervise:   true,
		ProcessSpec: wire.ProcessSpec{Ports: []string{"admin"}, Checks: []wire.Check{{Name: "tcp-admin", Type: wire.CheckTCP, Port: "admin"}}},
	}
	if !reflect.DeepEqual(gotDrv, wantDrv) {
		t.Errorf("submit --file sent\n%s\nwant\n%s", mustJSON(t, gotDrv), mustJSON(t, wantDrv))
	}
}

func TestBadHealthInputNamesTheFlag(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	unknown := writeSpec(t, "{\n  \"name\": \"web\",\n  \"prots\": [\"http\"],\n  \"command\": [\"/opt/x\"]\n}\n") // the field on line 3, the object ends on 5
	badCheck := writeSpec(t, `{"command": ["/opt/x"], "ports": ["http"], "checks": [{"name": "c", "type": "tcp", "port": "web"}]}`)
	badJSON := writeSpec(t, "{\"command\": [\"/opt/x\"],\n \"ports\": [\"http\",]}")
	cases := []testproc.BadFlag{
		{Args: []string{"run", "--port", "http", "--check-http", "web:/health", "--", "x"}, Flag: "--check-http"},
		{Args: []string{"run", "--check-tcp", "http", "--", "x"}, Flag: "--check-tcp"},
		{Args: []string{"run", "--port", "http", "--check-http", "http", "--", "x"}, Flag: "--check-http"},
		{Args: []string{"run", "--port", "http", "--check-http", "http:health", "--", "x"}, Flag: "--check-http"},
		{Args: []string{"run", "--port", "http", "--check-tcp", "http", "--check-interval", "0s", "--", "x"}, Flag: "--check-interval"},
		{Args: []string{"run", "--port", "http", "--check-tcp", "http", "--check-interval", "-5s", "--", "x"}, Flag: "--check-interval"},
		{Args: []string{"run", "--port", "http", "--check-tcp", "http", "--check-interval", "1s", "--", "x"}, Flag: "--check-interval"},
		{Args: []string{"run", "--port", "http", "--check-tcp", "http", "--check-timeout", "0s", "--", "x"}, Flag: "--check-timeout"},
		{Args: []string{"run", "--port", "http", "--check-tcp", "http", "--check-failures", "0", "--", "x"}, Flag: "--check-failures"},
		{Args: []string{"run", "--port", "http", "--check-tcp", "http", "--check-failures", "many", "--", "x"}, Flag: "--check-failures"},
		{Args: []string{"run", "--port", "http", "--check-tcp", "http", "--check-start-period", "-1s", "--", "x"}, Flag: "--check-start-period"},
		{Args: []string{"run", "--check-interval", "5s", "--", "x"}, Flag: "--check-interval"},
		{Args: []string{"run", "--port", "HTTP", "--", "x"}, Flag: "--port"},
		{Args: []string{"run", "--port", "http", "--port", "http", "--", "x"}, Flag: "--port"},
		{Args: []string{"run", "--check-exec", "curl -f localhost | grep ok", "--", "x"}, Flag: "--check-exec"},
		{Args: []string{"run", "--check-exec", "sh -c 'exit 1", "--", "x"}, Flag: "--check-exec"},
		{Args: []string{"run", "--check-exec", "  ", "--", "x"}, Flag: "--check-exec"},
		{Args: []string{"run", "--restart-mode", "sometimes", "--", "x"}, Flag: "--restart-mode"},
		{Args: []string{"run", "--restart-interval", "0s", "--", "x"}, Flag: "--restart-interval"},
		{Args: []string{"run", "--restart-attempts", "-1", "--", "x"}, Flag: "--restart-attempts"},
		{Args: []string{"submit", "--restart-delay", "2h", "--", "x"}, Flag: "--restart-delay"},
		{Args: []string{"submit", "--port", "http", "--check-http", "admin:/", "--", "x"}, Flag: "--check-http"},
		{Env: []string{"BERTH_SUBMIT_RESTART_MODE=never"}, Args: []string{"submit", "--", "x"}, Flag: "--restart-mode"},
		{Args: []string{"run", "--file", unknown}, Flag: "--file"},
		{Args: []string{"submit", "--file", unknown}, Flag: "--file"},
		{Args: []string{"run", "--file", badCheck}, Flag: "--file"},
		{Args: []string{"run", "--file", badJSON}, Flag: "--file"},
		{Args: []string{"run", "--file", filepath.Join(t.TempDir(), "none.json")}, Flag: "--file"},
		{Args: []string{"run", "--file", writeSpec(t, `{"name": "x"}`)}, Flag: "--file"}, // no command anywhere
	}
	results := testproc.CheckBadFlags(t, berthBin, 1, append(cleanEnv(), f.env()...), cases)
	if reqs := f.requests(); len(reqs) != 0 {
		t.Fatalf("bad input still sent %+v", reqs)
	}
	// The messages say what is wrong, not only where.
	for i, want := range map[int][]string{
		0:  {`port "web" is not one of the process's ports [http]`, "--port web"},
		2:  {"want LABEL:PATH"},
		4:  {"interval 0s: want from 100ms to 1h"},
		6:  {"timeout 2s", "--check-timeout"},
		11: {"no check to apply it to"},
		14: {`"|" unquoted`, "sh -c"},
		15: {"not closed"},
		17: {`mode "sometimes": want fail or delay`},
		23: {`line 3: unknown field "prots"`},
		25: {`port "web" is not one of the process's ports`},
		26: {"line 2"},
		28: {`"command" of --file`},
	} {
		for _, w := range want {
			if !strings.Contains(results[i].Stderr, w) {
				t.Errorf("%q: stderr %q lacks %q", cases[i].Args, results[i].Stderr, w)
			}
		}
	}
}

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		`/bin/check`:                       {"/bin/check"},
		"  curl  -sf\thttp://x/a?b=1,2 ":   {"curl", "-sf", "http://x/a?b=1,2"},
		`sh -c 'echo "$HOME" | grep /'`:    {"sh", "-c", `echo "$HOME" | grep /`},
		`say "a \"quoted\" \\ word" it\'s`: {"say", `a "quoted" \ word`, "it's"},
		`a"b"'c'd ''`:                      {"abcd", ""},
		`x "\n"`:                           {"x", `\n`},
	} {
		got, err := splitCommand(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{``, `   `, `a 'b`, `a "b`, `a\`, `a; b`, `a && b`, `a > f`, `echo $HOME`, "echo `id`", `echo "$HOME"`, `(a)`} {
		if got, err := splitCommand(in); err == nil {
			t.Errorf("splitCommand(%q) = %q, want an error", in, got)
		}
	}
}

// Default check names are type-label, numbered when taken, and never
// longer than wire takes.
func TestCheckNames(t *testing.T) {
	taken := map[string]bool{}
	long := strings.Repeat("p", 32)
	var got []string
	for _, c := range []wire.Check{
		{Type: wire.CheckHTTP, Port: "http"}, {Type: wire.CheckHTTP, Port: "http"}, {Type: wire.CheckExec}, {Type: wire.CheckExec},
		{Type: wire.CheckTCP, Port: long}, {Type: wire.CheckTCP, Port: long},
	} {
		c.Name = checkName(c, taken)
		got = append(got, c.Name)
		if c.Command == nil && c.Type == wire.CheckExec {
			c.Command = []string{"x"}
		}
		if err := wire.CheckChecks([]wire.Check{c}, []string{"http", long}); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	want := []string{"http-http", "http-http-2", "exec", "exec-2", "tcp-" + long[:28], "tcp-" + long[:26] + "-2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
}

func TestWorkerClear(t *testing.T) {
	f := newFakeMaster(t)
	res := berth(t, f.env(), "worker", "clear", "worker-a")
	if res.Code != 0 || res.Stdout != "cleared worker worker-a (ALIVE): no longer unhealthy, no app kept off it\n" {
		t.Fatalf("worker clear: %+v", res)
	}
	if reqs := f.requestLog(); len(reqs) != 1 || reqs[0] != "POST "+wire.MasterAPI.ClearWorker.Path("worker-a") {
		t.Fatalf("worker clear sent %q", reqs)
	}
	res = berth(t, f.env(), "worker", "clear", "nope")
	if res.Code != 1 || !strings.Contains(res.Stderr, "clear worker nope") || !strings.Contains(res.Stderr, "unknown worker") {
		t.Fatalf("worker clear of an unknown worker: %+v", res)
	}
	if res := berth(t, f.env(), "worker", "clear"); res.Code != 2 || !strings.Contains(res.Stderr, "usage: berth worker clear ID") {
		t.Fatalf("worker clear without an id: %+v", res)
	}
}

// healthCluster is a cluster whose processes have ports and checks, a
// worker unhealthy and an app kept off it, at now.
func healthCluster(now time.Time) wire.ClusterStatus {
	since := now.Add(-5 * time.Minute)
	code := 137
	return wire.ClusterStatus{
		MasterID: "m1", Status: wire.MasterAlive, View: wire.ViewLeader, Leader: "http://m1:7077",
		Workers: []wire.WorkerStatus{
			{ID: "w1", Address: "http://w1:8081", State: wire.WorkerAlive, Cores: 4, MemoryMB: 4096},
			{ID: "w2", Address: "http://w2:8081", State: wire.WorkerAlive, Cores: 4, MemoryMB: 4096,
				Unhealthy: "processes of 3 apps failed here within 10m0s", UnhealthySince: &since},
		},
		ActiveApps: []wire.AppStatus{{ID: "app-1", Name: "web", State: wire.AppRunning, CoresGranted: 2,
			Ports: []string{"http", "admin"},
			Executors: []wire.ExecutorStatus{
				{ID: 0, WorkerID: "w2", State: wire.ExecutorFailed, ExitCode: &code, Health: wire.HealthUnhealthy, Ports: map[string]int{"http": 20001, "admin": 20002},
					Message: "unhealthy: check web: no answer within its timeout"},
				{ID: 1, WorkerID: "w1", State: wire.ExecutorRunning, Health: wire.HealthHealthy, Ports: map[string]int{"http": 20001, "admin": 20002}},
				{ID: 2, WorkerID: "w1", State: wire.ExecutorRunning, Health: wire.HealthStarting, Ports: map[string]int{"http": 20003, "admin": 20004}},
			},
			Excluded: []wire.Exclusion{{WorkerID: "w2", Until: now.Add(9*time.Minute + 30*time.Second), Reason: "2 executors failed there within 10m0s"}},
		}},
		ActiveDrivers: []wire.DriverStatus{
			{ID: "driver-1", State: wire.DriverRunning, WorkerID: "w1", Cores: 1, MemoryMB: 512, Health: wire.HealthHealthy, Ports: map[string]int{"ui": 20010}},
			{ID: "driver-2", State: wire.DriverRunning, WorkerID: "w1", Cores: 1, MemoryMB: 512},
		},
	}
}

func TestStatusShowsHealth(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	if err := printStatus(&out, healthCluster(now), now); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, re := range []string{
		`(?m)^w2 +http://w2:8081 +ALIVE, UNHEALTHY +`,
		`(?m)^Unhealthy \(.*berth worker clear ID\):\n  w2 since 11:55:00 \(5m0s ago\): processes of 3 apps failed here within 10m0s$`,
		`(?m)^Exclusions .*:\n  app-1 kept off w2 until 12:09:30 \(in 9m30s\): 2 executors failed there within 10m0s$`,
		`(?m)^Executors with ports or checks \(3\)\nAPP +EXECUTOR +WORKER +STATE +HEALTH +PORTS\n` +
			`app-1 +1 +w1 +RUNNING +healthy +admin=20002,http=20001\n` +
			`app-1 +2 +w1 +RUNNING +starting +admin=20004,http=20003\n` +
			`app-1 +0 +w2 +FAILED +unhealthy +admin=20002,http=20001\n`,
		`(?m)^ID +NAME +STATE +WORKER +CORES +MEMORY +QUEUE +HEALTH +PORTS +MESSAGE\n` +
			`driver-1 +- +RUNNING +w1 +1 +512m +default +healthy +ui=20010 *\n` +
			`driver-2 +- +RUNNING +w1 +1 +512m +default +- +-`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("status lacks %s:\n%s", re, text)
		}
	}
	// Without ports or checks, the tables are as they were.
	out.Reset()
	if err := printStatus(&out, testCluster(), now); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"HEALTH", "UNHEALTHY", "Exclusions", "Executors with"} {
		if strings.Contains(out.String(), absent) {
			t.Errorf("status of a cluster without checks shows %q:\n%s", absent, out.String())
		}
	}
}

// Many checked executors: the list stops at listedExecutors and says how
// many more.
func TestStatusBoundsTheExecutors(t *testing.T) {
	now := time.Now()
	st := healthCluster(now)
	a := &st.ActiveApps[0]
	for i := len(a.Executors); i < listedExecutors+7; i++ {
		a.Executors = append(a.Executors, wire.ExecutorStatus{ID: i, WorkerID: "w1", State: wire.ExecutorRunning, Health: wire.HealthHealthy})
	}
	var out bytes.Buffer
	if err := printStatus(&out, st, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(7 more: berth app ID lists an app's)") || strings.Count(out.String(), "\napp-1 ") != listedExecutors+1 {
		t.Fatalf("status of %d checked executors:\n%s", len(a.Executors), out.String())
	}
}

// --json carries the health fields as the master answered them.
func TestStatusJSONCarriesHealth(t *testing.T) {
	f := newFakeMaster(t)
	now := time.Now().UTC().Truncate(time.Second)
	hc := healthCluster(now)
	f.mu.Lock()
	f.hostile = func(st *wire.ClusterStatus) {
		st.Workers = append(st.Workers, hc.Workers[1])
		st.ActiveApps = hc.ActiveApps
		st.ActiveDrivers = hc.ActiveDrivers
	}
	f.mu.Unlock()
	res := berth(t, f.env(), "status", "--json")
	var st wire.ClusterStatus
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &st) != nil {
		t.Fatalf("status --json: %+v", res)
	}
	w2 := st.Workers[len(st.Workers)-1]
	a := st.ActiveApps[0]
	if w2.Unhealthy == "" || w2.UnhealthySince == nil || !w2.UnhealthySince.Equal(now.Add(-5*time.Minute)) ||
		!reflect.DeepEqual(a.Excluded, hc.ActiveApps[0].Excluded) || !reflect.DeepEqual(a.Executors, hc.ActiveApps[0].Executors) ||
		!reflect.DeepEqual(a.Ports, []string{"http", "admin"}) || st.ActiveDrivers[0].Health != wire.HealthHealthy || st.ActiveDrivers[0].Ports["ui"] != 20010 {
		t.Fatalf("status --json decoded to %s", mustJSON(t, st))
	}
	res = berth(t, f.env(), "status")
	if res.Code != 0 || !strings.Contains(res.Stdout, "ALIVE, UNHEALTHY") || !strings.Contains(res.Stdout, "app-1 kept off w2 until") {
		t.Fatalf("status: %+v", res)
	}
}

func TestFormatEventShowsHealthAndPorts(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	got := formatEvent(wire.AppEvent{Type: wire.EventExecutorHealthy, Executor: &wire.ExecutorStatus{
		ID: 3, WorkerID: "w1", Cores: 1, State: wire.ExecutorRunning, Health: wire.HealthHealthy,
		Ports: map[string]int{"http": 20001, "admin": 20002}}}, now)
	want := "2025-01-02 03:04:05.000  executorHealthy  exec=3 worker=w1 cores=1 state=RUNNING health=healthy ports=admin=20002,http=20001"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
