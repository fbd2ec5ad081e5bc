package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The test binary doubles as the child process: with helperEnv set it runs
// helperMain instead of the tests. Children get only the env of the launch
// request (plus PATH...), so every launch in the tests passes helperEnv.
const helperEnv = "BERTH_WORKER_TEST_HELPER"

func TestMain(m *testing.M) {
	RunGuardianIfAsked() // the workers under test start this binary as their guardian
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperMain is the child: helper <mode> [args].
//
//	sleep           print "pid N", sleep until killed
//	ignore-term     ignore SIGTERM, print "pid N", sleep until SIGKILL
//	exit N          exit with status N
//	kill-self       die by SIGKILL
//	print-env ARGS  print {"args":..., "env":...} as JSON, exit 0
//	fail-once       exit 1 unless ./marker exists (then exit 0); creates it
//	serve           answer GET /health on 127.0.0.1:$BERTH_PORT_HTTP with
//	                200; print "pid N" once listening
//	serve-host      serve, on $BERTH_HOST (the worker's address) only
//	serve-ports A B answer every GET on 127.0.0.1, ports A to B; print
//	                "listening" once they all are
func helperMain(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "helper: no mode")
		return 2
	}
	switch args[0] {
	case "sleep":
		fmt.Printf("pid %d\n", os.Getpid())
		time.Sleep(time.Hour)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Printf("pid %d\n", os.Getpid())
		time.Sleep(time.Hour)
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "kill-self":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	case "print-env":
		out, _ := json.Marshal(map[string]any{"args": os.Args, "env": os.Environ()})
		os.Stdout.Write(append(out, '\n'))
	case "serve", "serve-host":
		host := "127.0.0.1"
		if args[0] == "serve-host" {
			host = os.Getenv("BERTH_HOST") // the worker's address only, as a service bound to it
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, os.Getenv("BERTH_PORT_HTTP")))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("pid %d\n", os.Getpid())
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	case "serve-ports":
		first, _ := strconv.Atoi(args[1])
		last, _ := strconv.Atoi(args[2])
		ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		for port := first; port <= last; port++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			go http.Serve(ln, ok)
		}
		fmt.Println("listening")
		time.Sleep(time.Hour)
	case "fail-once":
		if _, err := os.Stat("marker"); err == nil {
			return 0
		}
		_ = os.WriteFile("marker", nil, 0o644)
		fmt.Fprintln(os.Stderr, "failing once")
		return 1
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown mode", args[0])
		return 2
	}
	return 0
}

// helperCmd is the argv of a helper child.
func helperCmd(t testing.TB, mode string, args ...string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{exe, mode}, args...)
}

// helperEnvMap is the env of a helper child. GORACE: a race-enabled binary
// otherwise sleeps 1s at exit.
var helperEnvMap = map[string]string{helperEnv: "1", "GORACE": "atexit_sleep_ms=0"}

// logWriter sends the worker's log to t.Log until the test ends.
type logWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

const testSecret = "s3cret"

// testWorker is a running Worker under test.
type testWorker struct {
	*Worker
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startWorker runs a worker registered (eventually) with the given masters.
func startWorker(t testing.TB, masters []string, mod func(*Config)) *testWorker {
	t.Helper()
	cfg := Config{
		Masters: masters, Secret: testSecret, WorkDir: t.TempDir(), HostDir: t.TempDir(),
		userdbDir: userdbTestDir(t), Cores: 4, MemoryMB: 4096, // never the host's /run/systemd/userdb
		KillGrace:          400 * time.Millisecond,
		RegisterBackoffMax: 200 * time.Millisecond,
		RequestTimeout:     2 * time.Second,
		DriverRestartMin:   50 * time.Millisecond,
		DriverRestartMax:   200 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	lw := &logWriter{t: t}
	w, err := New(cfg, slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tw := &testWorker{Worker: w, t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { tw.done <- w.Run(ctx) }()
	select {
	case <-w.Ready():
	case err := <-tw.done:
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		tw.stop()
		lw.mu.Lock()
		lw.done = true
		lw.mu.Unlock()
	})
	return tw
}

// startRegistered runs a worker against a fake master of its own and
// waits until it has registered.
func startRegistered(t testing.TB, mod func(*Config)) (*fakeMaster, *testWorker) {
	t.Helper()
	fm := newFakeMaster(t)
	w := startWorker(t, []string{fm.URL()}, mod)
	fm.waitRegistered(t)
	return fm, w
}

// startParallel is the opening of most tests: it marks t parallel, then
// starts a worker registered with a fake master of its own.
func startParallel(t *testing.T, mod func(*Config)) (*fakeMaster, *testWorker) {
	t.Helper()
	t.Parallel()
	return startRegistered(t, mod)
}

// stop cancels Run and waits for it.
func (tw *testWorker) stop() {
	tw.once.Do(func() {
		tw.cancel()
		select {
		case err := <-tw.done:
			if err != nil {
				tw.t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			tw.t.Error("Run did not return")
		}
	})
}

// call sends a request to the worker's API with the test secret and returns
// the status and body.
func (tw *testWorker) call(method, path string, body any) (int, string) {
	return callWith(tw.t, testSecret, method, tw.URL()+path, body)
}

func callWith(t testing.TB, secret, method, url string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json") // as the master sends it
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// mustCall is call expecting status want.
func (tw *testWorker) mustCall(want int, method, path string, body any) string {
	tw.t.Helper()
	got, out := tw.call(method, path, body)
	if got != want {
		tw.t.Fatalf("%s %s: status %d, want %d: %s", method, path, got, want, out)
	}
	return out
}

func (tw *testWorker) state() wire.WorkerLatestState {
	tw.t.Helper()
	var st wire.WorkerLatestState
	if err := json.Unmarshal([]byte(tw.mustCall(200, "GET", "/v1/state", nil)), &st); err != nil {
		tw.t.Fatal(err)
	}
	return st
}

func (tw *testWorker) launchExecutor(appID string, execID int, argv []string) {
	tw.t.Helper()
	tw.mustCall(200, "POST", "/v1/executors", wire.LaunchExecutor{
		Epoch: 5,
		AppID: appID, ExecutorID: execID, Process: wire.Process{Command: argv, Env: helperEnvMap, Cores: 1, MemoryMB: 256},
	})
}

// launchOf is the launch of executor execID of appID running argv with env
// (helperEnvMap's entries added).
func launchOf(appID string, execID int, argv []string, env map[string]string) wire.LaunchExecutor {
	e := map[string]string{}
	maps.Copy(e, helperEnvMap)
	maps.Copy(e, env)
	return wire.LaunchExecutor{Epoch: 5, AppID: appID, ExecutorID: execID,
		Process: wire.Process{Command: argv, Env: e, Cores: 1, MemoryMB: 256}}
}

// driverLaunchOf is the launch of driver id running argv.
func driverLaunchOf(id string, supervise bool, argv []string) wire.LaunchDriver {
	return wire.LaunchDriver{Epoch: 5, DriverID: id, Supervise: supervise,
		Process: wire.Process{Command: argv, Env: helperEnvMap, Cores: 1, MemoryMB: 256}}
}

// execDir is an executor's directory (its logs; its home below).
func (tw *testWorker) execDir(appID string, execID int) string {
	return filepath.Join(tw.Config().WorkDir, appID, strconv.Itoa(execID))
}

// pidOf waits for a helper child to print its pid in dir/stdout.
func pidOf(t testing.TB, dir string) int {
	t.Helper()
	pid := 0
	testproc.Eventually(t, 10*time.Second, "the child's pid in "+dir, func() bool {
		data, _ := os.ReadFile(filepath.Join(dir, "stdout"))
		_, err := fmt.Sscanf(string(data), "pid %d", &pid)
		return err == nil
	})
	return pid
}

// runningPid waits for an executor to be RUNNING and to print its pid.
func (tw *testWorker) runningPid(appID string, execID int) int {
	tw.t.Helper()
	pid := pidOf(tw.t, tw.execDir(appID, execID))
	testproc.Eventually(tw.t, 10*time.Second, "RUNNING in GET /v1/state", func() bool {
		for _, e := range tw.state().Executors {
			if e.AppID == appID && e.ExecutorID == execID {
				return e.State == wire.ExecutorRunning
			}
		}
		return false
	})
	return pid
}

// runSleeper launches an executor that sleeps until it is killed and
// returns its pid once it runs.
func (tw *testWorker) runSleeper(appID string, execID int) int {
	tw.t.Helper()
	tw.launchExecutor(appID, execID, helperCmd(tw.t, "sleep"))
	return tw.runningPid(appID, execID)
}
