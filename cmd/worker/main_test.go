package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// workerBin is the worker binary, built once for the tests that need a real
// process (exit codes, signals).
var workerBin string

func TestMain(m *testing.M) { os.Exit(testproc.MainWithBinary(m, "worker", &workerBin)) }

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
	cases := []testproc.BadFlag{
		{Args: []string{"--work-dir", t.TempDir()}, Flag: "--master"},
		{Args: []string{"--master", "127.0.0.1:7077", "--work-dir", t.TempDir()}, Flag: "--master"},
		{Args: []string{"--master", "http://a:1,ftp://b", "--work-dir", t.TempDir()}, Flag: "--master"},
		{Args: []string{"--master", "http://127.0.0.1:1/api", "--work-dir", t.TempDir()}, Flag: "--master"},
		{Args: append(ok, "--cores", "x"), Flag: "--cores"},
		{Args: append(ok, "--cores", "70000"), Flag: "--cores"},
		{Env: []string{"BERTH_WORKER_CORES=-3"}, Args: ok, Flag: "--cores"},
		{Args: append(ok, "--memory", "lots"), Flag: "--memory"},
		{Args: append(ok, "--memory", "0"), Flag: "--memory"},
		{Env: []string{"BERTH_WORKER_MEMORY=2x"}, Args: ok, Flag: "--memory"},
		{Args: []string{"--master", "http://127.0.0.1:1", "--work-dir", filepath.Join(file, "sub")}, Flag: "--work-dir"},
		{Args: []string{"--master", "http://127.0.0.1:1", "--work-dir", filepath.Join(readOnly, "sub")}, Flag: "--work-dir"},
		{Args: append(ok, "--host", "0.0.0.0"), Flag: "--host"},
		{Args: append(ok, "--port", "http"), Flag: "port"},
		{Args: append(ok, "--port", "70000"), Flag: "--port"},
		{Args: append(ok, "--id", "../x"), Flag: "--id"},
		{Args: append(ok, "--kill-grace", "-1s"), Flag: "--kill-grace"},
		{Args: append(ok, "--cleanup-ttl", "-1h"), Flag: "--cleanup-ttl"},
		{Env: []string{"BERTH_WORKER_CLEANUP_TTL=soon"}, Args: ok, Flag: "flag cleanup-ttl"},
		{Args: append(ok, "--cleanup-interval", "-1s"), Flag: "--cleanup-interval"},
		{Args: append(ok, "--log-level", "loud"), Flag: "--log-level"},
		{Args: append(ok, "--label", "gpu-model"), Flag: "--label"},
		{Args: []string{"--version", "extra"}, Flag: `worker: unexpected argument "extra"`},
		{Args: []string{"--version=maybe"}, Flag: "worker: invalid boolean value"},
		{Args: append(ok, "--label", "gpu model=T4"), Flag: "--label"},
		{Args: append(ok, "--label", "zone=a", "--label", "zone=b"), Flag: "--label"},
		{Args: append(ok, "--no-such-flag"), Flag: "no-such-flag"},
		{Args: append(ok, "--run-as", "no-such-user-xyz"), Flag: "--run-as"},
		{Args: append(ok, "--max-connections", "-1"), Flag: "--max-connections"},
		{Args: append(ok, "--log-max-size", "huge"), Flag: "--log-max-size"},
		{Args: append(ok, "--min-free-disk", "lots"), Flag: "--min-free-disk"},
		{Args: append(ok, "--port-range", "80-90"), Flag: "--port-range"},
		{Args: append(ok, "--port-range", "30000-20000"), Flag: "--port-range"},
		{Args: append(ok, "--port-range", "many"), Flag: "--port-range"},
		{Args: append(ok, "--min-free-disk", "-1m"), Flag: "--min-free-disk"},
		{Args: append(ok, "--log-max-files", "-2"), Flag: "--log-max-files"},
		{Env: []string{"BERTH_WORKER_RUN_AS=no-such-user-xyz"}, Args: ok, Flag: "--run-as"},
		{Args: append(ok, "--run-as", "nobody", "--work-dir", filepath.Join(t.TempDir(), "w")), Flag: "--run-as"}, // not root, or a work dir nobody cannot reach
		{Args: append(ok, "--resource", "gpu=0"), Flag: "--resource"},
		{Args: append(ok, "--resource", "GPU=2"), Flag: "--resource"},
		{Args: append(ok, "--resource", "gpu"), Flag: "--resource"},
		{Args: append(ok, "--resource", "gpu=2", "--resource", "gpu=1"), Flag: "--resource"},
		{Args: append(ok, "--resource", "gpu:discovery=/no/such/script"), Flag: "--resource"},
		{Args: append(ok, "--resource", "gpu:discovery="+script(t, "echo not json")), Flag: "--resource"},
		{Args: append(ok, "--resource", "gpu:discovery="+script(t, `echo '{"name":"fpga","addresses":["0"]}'`)), Flag: "--resource"},
		{Args: append(ok, "--resource", "gpu:discovery="+script(t, `echo '{"name":"gpu","addresses":[]}'`)), Flag: "--resource"},
		{Args: append(ok, "--resource", "gpu:discovery="+script(t, "exit 3")), Flag: "--resource"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases[:11], cases[12:]...) // root writes anywhere
	}
	testproc.CheckBadFlags(t, workerBin, 2, []string{"PATH=" + os.Getenv("PATH")}, cases)
}

func TestHelp(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(workerBin, "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--master", "--secret", "--host", "--port", "--cores", "--memory", "--work-dir",
		"--kill-grace", "--cleanup-ttl", "--run-as", "--cleanup-interval", "--log-level", "--log-format", "--id", "--advertise-host",
		"BERTH_MASTER", "BERTH_SECRET", "BERTH_WORKER_CORES", "BERTH_WORKER_ID", "PATH, HOME, TMPDIR and LANG"} {
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
	mux.HandleFunc("POST /v1/workers", testproc.HandleJSON(func(_ *http.Request, req wire.RegisterWorker) (any, error) {
		m.mu.Lock()
		m.address = req.Address
		m.mu.Unlock()
		return wire.RegisteredWorker{MasterID: "mini", Epoch: 1, HeartbeatIntervalMs: 200}, nil
	}))
	mux.HandleFunc("POST /v1/workers/{id}/executor-state", testproc.HandleJSON(func(_ *http.Request, req wire.ExecutorStateChanged) (any, error) {
		m.mu.Lock()
		m.execStates = append(m.execStates, req)
		m.mu.Unlock()
		return struct{}{}, nil
	}))
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
	testproc.Eventually(t, 10*time.Second, "the worker's registration", func() bool { return m.workerAddress() != "" })
	if os.Geteuid() == 0 && !strings.Contains(stderr.String(), "level=WARN msg=\"running as root without --run-as") {
		t.Errorf("a root worker without --run-as did not warn:\n%s", stderr.String())
	}

	launch := wire.LaunchExecutor{Epoch: 1, AppID: appID, ExecutorID: 0, Process: wire.Process{
		Command: []string{"sh", "-c", "echo $$; sleep 300 & echo $!; wait"}, Cores: 1, MemoryMB: 10}}
	var ok struct{}
	if err := httpx.NewClient("k", 5*time.Second).Do(t.Context(), "POST", m.workerAddress()+"/v1/executors", launch, &ok); err != nil {
		t.Fatal(err)
	}
	pid, grandchild := 0, 0
	testproc.Eventually(t, 10*time.Second, "the executor's pids", func() bool {
		data, _ := os.ReadFile(filepath.Join(work, appID, "0", "stdout"))
		_, err := fmt.Sscanf(string(data), "%d\n%d", &pid, &grandchild)
		return err == nil
	})
	// The executor runs before its worker hears back from the exec: the
	// worker has listed its group with the guardian once it logs "started".
	testproc.Eventually(t, 10*time.Second, "the worker's log of the start", func() bool {
		return strings.Contains(stderr.String(), fmt.Sprintf("msg=started app=%s executor=0 pid=%d ", appID, pid))
	})
	return cmd, pid, grandchild
}

func TestKilledWorkerTakesItsChildren(t *testing.T) {
	t.Parallel()
	m := newMiniMaster(t)
	cmd, pid, grandchild := startBin(t, m, "app-k9")
	if !testproc.Alive(pid) || !testproc.Alive(grandchild) {
		t.Fatal("the executor is not running")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The executor dies through Pdeathsig, what it started through the
	// worker's guardian.
	testproc.Eventually(t, 10*time.Second, "the executor to die with its worker", func() bool { return !testproc.Alive(pid) })
	testproc.Eventually(t, 10*time.Second, "the executor's own child to die with the worker", func() bool { return !testproc.Alive(grandchild) })
}

func TestSIGTERMKillsChildrenReportsAndExits0(t *testing.T) {
	t.Parallel()
	m := newMiniMaster(t)
	cmd, pid, grandchild := startBin(t, m, "app-term")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := testproc.ExitCode(t, cmd, 15*time.Second); code != 0 {
		t.Errorf("worker exit %d after SIGTERM, want 0", code)
	}
	if testproc.Alive(pid) {
		t.Error("the executor survived")
	}
	testproc.Eventually(t, 5*time.Second, "the executor's own child to die", func() bool { return !testproc.Alive(grandchild) })
	if s := m.final("app-term"); s == nil || s.State != wire.ExecutorKilled {
		t.Errorf("final state reported: %+v", s)
	}
}

// script writes an executable shell script running body.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "discover.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
