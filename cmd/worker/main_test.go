package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/testproc"
	"github.com/berth-cluster/berth/wire"
)

// workerBin is the worker binary, built once for the tests that need a real
// process (exit codes, signals).
var workerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "berth-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerBin = filepath.Join(dir, "worker")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", workerBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the worker: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runBin runs the worker binary to completion with args and extra env.
func runBin(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(workerBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not exit", args)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func TestBadInputsAreRefusedNamingTheFlag(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	ok := []string{"--master", "http://127.0.0.1:1", "--work-dir", t.TempDir()}
	cases := []struct {
		env  []string
		args []string
		flag string
	}{
		{nil, []string{"--work-dir", t.TempDir()}, "--master"},
		{nil, []string{"--master", "127.0.0.1:7077", "--work-dir", t.TempDir()}, "--master"},
		{nil, []string{"--master", "http://a:1,ftp://b", "--work-dir", t.TempDir()}, "--master"},
		{nil, append(ok, "--cores", "x"), "--cores"},
		{nil, append(ok, "--cores", "0"), "--cores"},
		{nil, append(ok, "--cores", "70000"), "--cores"},
		{[]string{"BERTH_WORKER_CORES=-3"}, ok, "--cores"},
		{nil, append(ok, "--memory", "lots"), "--memory"},
		{nil, append(ok, "--memory", "0"), "--memory"},
		{[]string{"BERTH_WORKER_MEMORY=2x"}, ok, "--memory"},
		{nil, []string{"--master", "http://127.0.0.1:1", "--work-dir", filepath.Join(file, "sub")}, "--work-dir"},
		{nil, []string{"--master", "http://127.0.0.1:1", "--work-dir", filepath.Join(readOnly, "sub")}, "--work-dir"},
		{nil, append(ok, "--host", "0.0.0.0"), "--host"},
		{nil, append(ok, "--port", "http"), "port"},
		{nil, append(ok, "--port", "70000"), "--port"},
		{nil, append(ok, "--id", "../x"), "--id"},
		{nil, append(ok, "--kill-grace", "-1s"), "--kill-grace"},
		{nil, append(ok, "--cleanup-ttl", "-1h"), "--cleanup-ttl"},
		{[]string{"BERTH_WORKER_CLEANUP_TTL=soon"}, ok, "flag cleanup-ttl"},
		{nil, append(ok, "--cleanup-interval", "0s"), "--cleanup-interval"},
		{nil, append(ok, "--log-level", "loud"), "--log-level"},
		{nil, append(ok, "--no-such-flag"), "no-such-flag"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases[:11], cases[12:]...) // root writes anywhere
	}
	for _, c := range cases {
		code, stderr := runBin(t, c.env, c.args...)
		if code != 2 || !strings.Contains(stderr, c.flag) {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 naming %s", c.env, c.args, code, stderr, c.flag)
		}
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(workerBin, "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--master", "--secret", "--host", "--port", "--cores", "--memory", "--work-dir",
		"--kill-grace", "--cleanup-ttl", "--cleanup-interval", "--log-level", "--log-format", "--id", "--advertise-host",
		"BERTH_MASTER", "BERTH_SECRET", "BERTH_WORKER_CORES", "PATH, HOME, TMPDIR and LANG"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("--help does not mention %s", flag)
		}
	}
}

// miniMaster accepts the worker and records what it reports.
type miniMaster struct {
	srv        *httptest.Server
	mu         sync.Mutex
	address    string
	execStates []wire.ExecutorStateChanged
}

func newMiniMaster(t *testing.T) *miniMaster {
	m := &miniMaster{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workers", func(w http.ResponseWriter, r *http.Request) {
		var req wire.RegisterWorker
		if err := httpx.DecodeJSON(w, r, &req); err != nil {
			httpx.WriteErr(w, err)
			return
		}
		m.mu.Lock()
		m.address = req.Address
		m.mu.Unlock()
		httpx.WriteJSON(w, 200, wire.RegisteredWorker{MasterID: "mini", Epoch: 1, HeartbeatIntervalMs: 200})
	})
	mux.HandleFunc("POST /v1/workers/{id}/executor-state", func(w http.ResponseWriter, r *http.Request) {
		var req wire.ExecutorStateChanged
		if err := httpx.DecodeJSON(w, r, &req); err != nil {
			httpx.WriteErr(w, err)
			return
		}
		m.mu.Lock()
		m.execStates = append(m.execStates, req)
		m.mu.Unlock()
		httpx.WriteJSON(w, 200, struct{}{})
	})
	mux.HandleFunc("POST /v1/workers/{id}/{what}", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, struct{}{}) // heartbeats, latest state, driver states
	})
	m.srv = httptest.NewServer(httpx.RequireSecret("k", mux))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *miniMaster) workerAddress() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.address
}

func (m *miniMaster) final(appID string) *wire.ExecutorStateChanged {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.execStates {
		if s.AppID == appID && s.State.Finished() {
			return &s
		}
	}
	return nil
}

// startBin starts the worker binary against m and launches one executor: a
// shell that prints its pid, starts a sleep in the background (a
// grandchild of the worker), prints its pid and waits. It returns the worker
// process and the two pids.
func startBin(t *testing.T, m *miniMaster, appID string) (*exec.Cmd, int, int) {
	t.Helper()
	work := t.TempDir()
	cmd := exec.Command(workerBin, "--master", m.srv.URL, "--work-dir", work, "--kill-grace", "2s", "--log-level", "debug")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BERTH_SECRET=k"}
	var stderr testproc.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // ours; a no-op once it exited
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker's stderr:\n%s", stderr.String())
		}
	})
	eventually(t, 10*time.Second, "the worker's registration", func() bool { return m.workerAddress() != "" })

	launch := wire.LaunchExecutor{Epoch: 1, AppID: appID, ExecutorID: 0, Cores: 1, MemoryMB: 10,
		Command: []string{"sh", "-c", "echo $$; sleep 300 & echo $!; wait"}}
	var ok struct{}
	if err := httpx.NewClient("k", 5*time.Second).Do(t.Context(), "POST", m.workerAddress()+"/v1/executors", launch, &ok); err != nil {
		t.Fatal(err)
	}
	pid, grandchild := 0, 0
	eventually(t, 10*time.Second, "the executor's pids", func() bool {
		data, _ := os.ReadFile(filepath.Join(work, appID, "0", "stdout"))
		_, err := fmt.Sscanf(string(data), "%d\n%d", &pid, &grandchild)
		return err == nil
	})
	return cmd, pid, grandchild
}

// alive reports whether pid runs; a zombie (dead, not yet reaped by its new
// parent) counts as dead.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestKilledWorkerTakesItsChildren(t *testing.T) {
	t.Parallel()
	m := newMiniMaster(t)
	cmd, pid, grandchild := startBin(t, m, "app-k9")
	if !alive(pid) || !alive(grandchild) {
		t.Fatal("the executor is not running")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The executor dies through Pdeathsig, what it started through the
	// worker's guardian.
	eventually(t, 10*time.Second, "the executor to die with its worker", func() bool { return !alive(pid) })
	eventually(t, 10*time.Second, "the executor's own child to die with the worker", func() bool { return !alive(grandchild) })
}

func TestSIGTERMKillsChildrenReportsAndExits0(t *testing.T) {
	t.Parallel()
	m := newMiniMaster(t)
	cmd, pid, grandchild := startBin(t, m, "app-term")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("worker exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the worker did not exit on SIGTERM")
	}
	if alive(pid) {
		t.Error("the executor survived")
	}
	eventually(t, 5*time.Second, "the executor's own child to die", func() bool { return !alive(grandchild) })
	if s := m.final("app-term"); s == nil || s.State != wire.ExecutorKilled {
		t.Errorf("final state reported: %+v", s)
	}
}
