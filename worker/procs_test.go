package worker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

func TestExecutorExitStates(t *testing.T) {
	fm, w := startParallel(t, nil)

	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		argv    []string
		state   wire.ExecutorState
		code    int
		message string
		running bool // a RUNNING report comes first
	}{
		{helperCmd(t, "exit", "0"), wire.ExecutorExited, 0, "exited with code 0", true},
		{helperCmd(t, "exit", "3"), wire.ExecutorFailed, 3, "exited with code 3", true},
		{helperCmd(t, "kill-self"), wire.ExecutorFailed, 137, "exited with code 137: killed by SIGKILL (possibly out of memory)", true},
		{[]string{"berth-no-such-command"}, wire.ExecutorFailed, 127, "command not found", false},
		{[]string{"/nonexistent/berth"}, wire.ExecutorFailed, 127, "command not found", false},
		{[]string{notExec}, wire.ExecutorFailed, 126, "command not executable", false},
		// A path through a file is the app's mistake, not the worker's.
		{[]string{"/bin/sh/x"}, wire.ExecutorFailed, 126, "not a directory", false},
	}
	for i, c := range cases {
		w.launchExecutor("app-exit", i, c.argv)
	}
	for i, c := range cases {
		reps := fm.waitFinal(t, "app-exit", i)
		last := reps[len(reps)-1]
		if last.State != c.state || last.ExitCode == nil || *last.ExitCode != c.code || !strings.Contains(last.Message, c.message) {
			code := -1
			if last.ExitCode != nil {
				code = *last.ExitCode
			}
			t.Errorf("%v: %s code %d %q, want %s code %d %q", c.argv[1:], last.State, code, last.Message, c.state, c.code, c.message)
		}
		want := 1
		if c.running {
			want = 2
			if reps[0].State != wire.ExecutorRunning {
				t.Errorf("%v: first report %s, want RUNNING", c.argv, reps[0].State)
			}
		}
		if len(reps) != want {
			t.Errorf("%v: reports %v", c.argv, execStateNames(reps))
		}
	}
	// An ended executor leaves the state once the master's ack is processed.
	testproc.Eventually(t, 5*time.Second, "no ended executor in the state", func() bool { return len(w.state().Executors) == 0 })
}

func TestKillExecutor(t *testing.T) {
	fm, w := startParallel(t, nil)

	w.launchExecutor("app-1", 0, helperCmd(t, "sleep"))
	w.launchExecutor("app-1", 1, helperCmd(t, "ignore-term"))
	pid0, pid1 := w.runningPid("app-1", 0), w.runningPid("app-1", 1)
	if st := w.state(); len(st.Executors) != 2 || st.Executors[0].State != wire.ExecutorRunning {
		t.Fatalf("state %+v", st)
	}

	w.mustCall(200, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-1", ExecutorID: 0})
	reps := fm.waitFinal(t, "app-1", 0)
	last := reps[len(reps)-1]
	if last.State != wire.ExecutorKilled || *last.ExitCode != 143 || !strings.Contains(last.Message, "terminated by SIGTERM") {
		t.Errorf("killed executor: %+v", last)
	}
	if testproc.Alive(pid0) {
		t.Error("executor 0 still runs")
	}

	start := time.Now()
	w.mustCall(200, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-1", ExecutorID: 1})
	reps = fm.waitFinal(t, "app-1", 1)
	last = reps[len(reps)-1]
	if last.State != wire.ExecutorKilled || *last.ExitCode != 137 {
		t.Errorf("executor ignoring SIGTERM: %+v", last)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("SIGKILL came after %v, before the grace period (400ms)", d)
	}
	if testproc.Alive(pid1) {
		t.Error("executor 1 still runs")
	}

	// Killing what ended is a no-op; killing what never was is a 404.
	w.mustCall(200, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-1", ExecutorID: 1})
	out := w.mustCall(404, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-1", ExecutorID: 7})
	if !strings.Contains(out, "unknown executor") {
		t.Errorf("404 body %s", out)
	}
	w.mustCall(404, "POST", "/v1/drivers/kill", wire.KillDriver{Epoch: 5, DriverID: "driver-x"})
}

func TestStaleEpochIsRefused(t *testing.T) {
	fm, w := startParallel(t, nil) // the worker learns epoch 5

	launch := wire.LaunchExecutor{Epoch: 4, AppID: "app-1", ExecutorID: 0, Process: wire.Process{Command: helperCmd(t, "sleep"), Env: helperEnvMap, Cores: 1}}
	var stale wire.StaleEpoch
	if err := json.Unmarshal([]byte(w.mustCall(409, "POST", "/v1/executors", launch)), &stale); err != nil || stale.Epoch != 5 || stale.Error == "" {
		t.Errorf("409 body: %+v %v", stale, err)
	}
	if _, err := os.Stat(w.execDir("app-1", 0)); !os.IsNotExist(err) {
		t.Errorf("a stale launch created the executor's directory: %v", err)
	}
	if st := w.state(); len(st.Executors) != 0 || st.Epoch != 5 {
		t.Errorf("state after a stale launch: %+v", st)
	}

	launch.Epoch = 7 // a newer master
	w.mustCall(200, "POST", "/v1/executors", launch)
	w.runningPid("app-1", 0)
	if st := w.state(); st.Epoch != 7 || len(st.Executors) != 1 {
		t.Errorf("state after epoch 7: %+v", st)
	}
	// Epoch 5 is now stale, for every command.
	w.mustCall(409, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-1", ExecutorID: 0})
	w.mustCall(409, "POST", "/v1/apps/finished", wire.ApplicationFinished{Epoch: 6, AppID: "app-1"})
	w.mustCall(409, "POST", "/v1/drivers", wire.LaunchDriver{Epoch: 6, DriverID: "d", Process: wire.Process{Command: []string{"x"}}})
	w.mustCall(409, "POST", "/v1/drivers/kill", wire.KillDriver{Epoch: 6, DriverID: "d"})
	if st := w.state(); len(st.Executors) != 1 || st.Executors[0].State != wire.ExecutorRunning || len(st.Drivers) != 0 {
		t.Errorf("stale commands changed the state: %+v", st)
	}
	w.mustCall(200, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 7, AppID: "app-1", ExecutorID: 0})
	fm.waitFinal(t, "app-1", 0)
}

func TestLaunchIsIdempotent(t *testing.T) {
	fm, w := startParallel(t, nil)
	for range 3 {
		w.launchExecutor("app-1", 0, helperCmd(t, "sleep"))
	}
	w.runningPid("app-1", 0)
	testproc.Eventually(t, 5*time.Second, "RUNNING", func() bool { return len(fm.execReports("app-1", 0)) == 1 })
	if st := w.state(); len(st.Executors) != 1 {
		t.Errorf("state %+v", st)
	}
	data, _ := os.ReadFile(filepath.Join(w.execDir("app-1", 0), "stdout"))
	if n := strings.Count(string(data), "pid "); n != 1 {
		t.Errorf("%d processes started:\n%s", n, data)
	}
	drv := wire.LaunchDriver{Epoch: 5, DriverID: "driver-1", Process: wire.Process{Command: helperCmd(t, "sleep"), Env: helperEnvMap, Cores: 1}}
	w.mustCall(200, "POST", "/v1/drivers", drv)
	w.mustCall(200, "POST", "/v1/drivers", drv)
	pidOf(t, filepath.Join(w.Config().WorkDir, "drivers", "driver-1"))
	if st := w.state(); len(st.Drivers) != 1 || st.Drivers[0].State != wire.DriverRunning {
		t.Errorf("drivers %+v", st.Drivers)
	}
	// Even once it ended, a repeated launch does not start it again.
	w.mustCall(200, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-1", ExecutorID: 0})
	fm.waitFinal(t, "app-1", 0)
	w.launchExecutor("app-1", 0, helperCmd(t, "sleep"))
	for _, e := range w.state().Executors { // the ended one stays listed until its end is acked
		if !e.State.Finished() {
			t.Errorf("relaunched an ended executor: %+v", e)
		}
	}
}

type childView struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
}

// envMap is the child's environment by name.
func (v childView) envMap() map[string]string {
	env := map[string]string{}
	for _, kv := range v.Env {
		k, val, _ := strings.Cut(kv, "=")
		env[k] = val
	}
	return env
}

func readChildView(t *testing.T, w *testWorker, logPath string) childView {
	t.Helper()
	var out string
	testproc.Eventually(t, 10*time.Second, "the child's output at "+logPath, func() bool {
		code, body := w.call("GET", logPath, nil)
		out = body
		return code == 200 && strings.HasSuffix(body, "\n")
	})
	var v childView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	return v
}

// Not parallel: it sets an env var of the test process (the worker's).
func TestChildEnvironmentArgsAndNoShell(t *testing.T) {
	t.Setenv("BERTH_TEST_WORKER_PRIVATE", "must-not-leak")
	t.Setenv("LANG", "C.UTF-8")
	fm := newFakeMaster(t)
	w := startWorker(t, []string{fm.URL(), "http://127.0.0.1:1"}, func(c *Config) { c.AdvertiseHost = "localhost" })
	fm.waitRegistered(t)

	argv := helperCmd(t, "print-env", "--app={{APP_ID}}", "--id={{EXECUTOR_ID}}", "--cores={{CORES}}",
		"--host={{HOSTNAME}}", "$(touch pwned)", "`touch pwned2`; echo hi", "{{APP_ID}}{{APP_ID}}")
	w.mustCall(200, "POST", "/v1/executors", wire.LaunchExecutor{
		Epoch: 5, AppID: "app-env", ExecutorID: 2, Process: wire.Process{
			Command: argv, Cores: 3, MemoryMB: 512,
			Env: map[string]string{helperEnv: "1", "GORACE": "atexit_sleep_ms=0", "CUSTOM": "x y", "BERTH_CORES": "99", "LANG": "fr_FR.UTF-8"},
		},
	})
	v := readChildView(t, w, "/v1/executors/app-env/2/logs/stdout")
	wantArgs := []string{argv[0], "print-env", "--app=app-env", "--id=2", "--cores=3", "--host=localhost",
		"$(touch pwned)", "`touch pwned2`; echo hi", "app-envapp-env"}
	if !slices.Equal(v.Args, wantArgs) {
		t.Errorf("args %q\nwant %q", v.Args, wantArgs)
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(w.execDir("app-env", 2), f)); err == nil {
			t.Errorf("a shell ran: %s exists", f)
		}
	}
	env := v.envMap()
	want := map[string]string{
		wire.EnvAppID: "app-env", wire.EnvExecutorID: "2", wire.EnvCores: "3", // the worker's facts win over the app's env
		wire.EnvMemoryMB: "512", wire.EnvWorkerID: w.ID(), wire.EnvWorkerHost: "localhost",
		wire.EnvMaster: fm.URL() + ",http://127.0.0.1:1", "CUSTOM": "x y", "LANG": "fr_FR.UTF-8",
		"PATH": os.Getenv("PATH"), helperEnv: "1", "GORACE": "atexit_sleep_ms=0",
	}
	for k, val := range want {
		if env[k] != val {
			t.Errorf("env %s=%q, want %q", k, env[k], val)
		}
	}
	for _, k := range []string{"BERTH_TEST_WORKER_PRIVATE", wire.EnvSecret, wire.EnvDriverID} {
		if _, ok := env[k]; ok {
			t.Errorf("executor got %s", k)
		}
	}
	if len(env) > len(want)+3 { // + HOME, TMPDIR and PWD (set by os/exec)
		t.Errorf("unexpected env: %v", v.Env)
	}

	// Drivers get the credential the master minted for them (never the
	// worker's secret), and their own ids.
	w.mustCall(200, "POST", "/v1/drivers", wire.LaunchDriver{
		Epoch: 5, DriverID: "driver-env", Token: "drv1.driver-env.t0ken", Process: wire.Process{
			Command: helperCmd(t, "print-env", "{{CORES}}@{{HOSTNAME}}"), Env: helperEnvMap, Cores: 2, MemoryMB: 300,
		},
	})
	v = readChildView(t, w, "/v1/drivers/driver-env/logs/stdout")
	env = v.envMap()
	if v.Args[2] != "2@localhost" {
		t.Errorf("driver args %q", v.Args)
	}
	for k, val := range map[string]string{wire.EnvDriverID: "driver-env", wire.EnvToken: "drv1.driver-env.t0ken",
		wire.EnvCores: "2", wire.EnvMemoryMB: "300", wire.EnvWorkerID: w.ID()} {
		if env[k] != val {
			t.Errorf("driver env %s=%q, want %q", k, env[k], val)
		}
	}
	for _, k := range []string{"BERTH_TEST_WORKER_PRIVATE", wire.EnvSecret} {
		if _, ok := env[k]; ok {
			t.Errorf("driver got %s", k)
		}
	}
	reps := fm.waitDriverFinal(t, "driver-env")
	if got := driverStateNames(reps); !slices.Equal(got, []string{"RUNNING", "FINISHED"}) {
		t.Errorf("driver reports %v", got)
	}
}

func TestLogsEndpoint(t *testing.T) {
	_, w := startParallel(t, nil)
	pid := w.runSleeper("app-1", 0)
	whole := w.mustCall(200, "GET", "/v1/executors/app-1/0/logs/stdout", nil)
	if whole != "pid "+strconv.Itoa(pid)+"\n" {
		t.Errorf("stdout %q", whole)
	}
	if got := w.mustCall(200, "GET", "/v1/executors/app-1/0/logs/stdout?tail=3", nil); got != whole[len(whole)-3:] {
		t.Errorf("tail=3: %q", got)
	}
	if got := w.mustCall(200, "GET", "/v1/executors/app-1/0/logs/stdout?tail=1000", nil); got != whole {
		t.Errorf("tail=1000: %q", got)
	}
	if got := w.mustCall(200, "GET", "/v1/executors/app-1/0/logs/stderr", nil); got != "" {
		t.Errorf("stderr %q", got)
	}
	w.mustCall(404, "GET", "/v1/executors/app-1/1/logs/stdout", nil)
	w.mustCall(404, "GET", "/v1/executors/app-2/0/logs/stdout", nil)
	w.mustCall(404, "GET", "/v1/drivers/driver-1/logs/stdout", nil)
	w.mustCall(400, "GET", "/v1/executors/app-1/0/logs/stdin", nil)
	w.mustCall(400, "GET", "/v1/executors/app-1/0/logs/stdout?tail=-1", nil)
	w.mustCall(400, "GET", "/v1/executors/app-1/00/logs/stdout", nil)
	w.mustCall(400, "GET", "/v1/executors/..%2F..%2Fetc/0/logs/stdout", nil)
	w.mustCall(400, "GET", "/v1/drivers/.hidden/logs/stdout", nil)
}

func TestApplicationFinishedKillsItsExecutors(t *testing.T) {
	fm, w := startParallel(t, nil)
	w.launchExecutor("app-a", 0, helperCmd(t, "sleep"))
	w.launchExecutor("app-a", 1, helperCmd(t, "sleep"))
	pidB := w.runSleeper("app-b", 0)
	w.runningPid("app-a", 0)
	w.runningPid("app-a", 1)
	w.mustCall(200, "POST", "/v1/apps/finished", wire.ApplicationFinished{Epoch: 5, AppID: "app-a"})
	w.mustCall(200, "POST", "/v1/apps/finished", wire.ApplicationFinished{Epoch: 5, AppID: "app-unknown"})
	for _, id := range []int{0, 1} {
		reps := fm.waitFinal(t, "app-a", id)
		if last := reps[len(reps)-1]; last.State != wire.ExecutorKilled || !strings.Contains(last.Message, "application finished") {
			t.Errorf("app-a/%d: %+v", id, last)
		}
	}
	if !testproc.Alive(pidB) {
		t.Error("app-b's executor was killed")
	}
	// The ended ones leave the state once the master's ack is processed.
	testproc.Eventually(t, 5*time.Second, "only app-b's executor in the state", func() bool {
		st := w.state()
		return len(st.Executors) == 1 && st.Executors[0].AppID == "app-b"
	})
}

func TestDrivers(t *testing.T) {
	fm, w := startParallel(t, nil)
	launch := func(id string, supervise bool, argv []string) {
		w.mustCall(200, "POST", "/v1/drivers", wire.LaunchDriver{Epoch: 5, DriverID: id, Supervise: supervise,
			Process: wire.Process{Command: argv, Env: helperEnvMap, Cores: 1, MemoryMB: 100}})
	}
	launch("drv-supervised", true, helperCmd(t, "fail-once"))
	launch("drv-fails", false, helperCmd(t, "exit", "2"))
	launch("drv-missing", false, []string{"berth-no-such-driver"})
	launch("drv-killed", true, helperCmd(t, "sleep"))
	launch("drv-backoff", true, helperCmd(t, "exit", "1"))

	check := func(id string, states []string, codes ...int) []wire.DriverStateChanged {
		t.Helper()
		reps := fm.waitDriverFinal(t, id)
		last := reps[len(reps)-1]
		if got := driverStateNames(reps); !slices.Equal(got, states) || last.ExitCode == nil || !slices.Contains(codes, *last.ExitCode) {
			t.Errorf("%s: reports %v (last %+v), want %v with code %v", id, got, last, states, codes)
		}
		return reps
	}
	check("drv-supervised", []string{"RUNNING", "FINISHED"}, 0)
	stderr := w.mustCall(200, "GET", "/v1/drivers/drv-supervised/logs/stderr", nil)
	if strings.Count(stderr, "failing once") != 1 || !strings.Contains(stderr, "restarting it (run 2)") {
		t.Errorf("supervised driver's stderr %q", stderr)
	}
	check("drv-fails", []string{"RUNNING", "FAILED"}, 2)
	reps := check("drv-missing", []string{"ERROR"}, 127)
	if !strings.Contains(reps[0].Message, "command not found") {
		t.Errorf("missing driver: %q", reps[0].Message)
	}

	pidOf(t, filepath.Join(w.Config().WorkDir, "drivers", "drv-killed"))
	w.mustCall(200, "POST", "/v1/drivers/kill", wire.KillDriver{Epoch: 5, DriverID: "drv-killed"})
	check("drv-killed", []string{"RUNNING", "KILLED"}, 143)

	// A driver failing over and over is restarted until killed.
	testproc.Eventually(t, 10*time.Second, "3 runs of drv-backoff", func() bool {
		out := w.mustCall(200, "GET", "/v1/drivers/drv-backoff/logs/stderr", nil)
		return strings.Contains(out, "(run 3)")
	})
	w.mustCall(200, "POST", "/v1/drivers/kill", wire.KillDriver{Epoch: 5, DriverID: "drv-backoff"})
	// Killed while waiting to restart (its last exit code), or while running.
	check("drv-backoff", []string{"RUNNING", "KILLED"}, 1, 143)
}

// Cancelling Run (the cmd does on SIGTERM) kills everything, reports the
// final states and returns.
func TestShutdownKillsAndReports(t *testing.T) {
	fm, w := startParallel(t, nil)
	w.launchExecutor("app-1", 0, helperCmd(t, "sleep"))
	w.launchExecutor("app-1", 1, helperCmd(t, "ignore-term"))
	w.mustCall(200, "POST", "/v1/drivers", wire.LaunchDriver{Epoch: 5, DriverID: "drv-1", Process: wire.Process{Command: helperCmd(t, "sleep"), Env: helperEnvMap, Cores: 1}})
	pids := []int{w.runningPid("app-1", 0), w.runningPid("app-1", 1),
		pidOf(t, filepath.Join(w.Config().WorkDir, "drivers", "drv-1"))}

	start := time.Now()
	w.stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	for _, pid := range pids {
		if testproc.Alive(pid) {
			t.Errorf("pid %d survived the shutdown", pid)
		}
	}
	for _, id := range []int{0, 1} {
		reps := fm.execReports("app-1", id)
		if len(reps) == 0 || reps[len(reps)-1].State != wire.ExecutorKilled || !strings.Contains(reps[len(reps)-1].Message, "worker shutting down") {
			t.Errorf("executor %d: reports %+v", id, reps)
		}
	}
	if reps := fm.driverReports("drv-1"); len(reps) == 0 || reps[len(reps)-1].State != wire.DriverKilled {
		t.Errorf("driver: reports %+v", reps)
	}
	if _, err := os.Stat(w.execDir("app-1", 0)); err != nil {
		t.Errorf("the work directory went away: %v", err)
	}
	// The master heard "decommission" before the final (KILLED) reports
	// and "leave" after them; the RUNNING reports come before all that.
	var notices []string
	for _, c := range fm.callLog() {
		if c == "decommission" || c == "leave" || c == "executor-state" {
			notices = append(notices, c)
		}
	}
	i := slices.Index(notices, "decommission")
	if i < 0 || len(notices) < i+4 || notices[len(notices)-1] != "leave" ||
		slices.ContainsFunc(notices[i+1:len(notices)-1], func(c string) bool { return c != "executor-state" }) {
		t.Errorf("lifecycle notices in order: %v (want decommission, the two KILLED reports, leave)", notices)
	}
}
