package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// berthBin is the berth binary under test, built once by TestMain.
var berthBin string

func TestMain(m *testing.M) { os.Exit(testproc.MainWithBinary(m, "berth", &berthBin)) }

const testSecret = "t0ps3cret"

// fakeMaster answers the CLI like a leader with a fixed cluster.
type fakeMaster struct {
	srv *httptest.Server

	mu          sync.Mutex
	drivers     []wire.DriverDescription
	keys        []string // the idempotency key of each driver submission
	apps        []wire.AppDescription
	unregisters int
	requests    []string
	removed     chan wire.AppState // pushed to open event streams
	moreWorkers int                // GET /v1/cluster lists this many more workers
	// Set by a test, under mu: hostile rewrites the cluster GET /v1/cluster
	// answers; endMessage is the removed app's message in its event stream.
	hostile    func(*wire.ClusterStatus)
	endMessage string
	kills      []string // the apps DELETE /v1/apps/{id} was asked of ("driver:ID" a driver's)
}

func newFakeMaster(t *testing.T) *fakeMaster {
	f := &fakeMaster{removed: make(chan wire.AppState, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		st := testCluster()
		f.mu.Lock()
		for i := range f.moreWorkers {
			st.Workers = append(st.Workers, wire.WorkerStatus{ID: fmt.Sprintf("worker-x%03d", i), State: wire.WorkerAlive, Cores: 4, MemoryMB: 1024,
				Resources: []wire.ResourceUse{{Name: "gpu", Addresses: []string{"0", "1"}, Used: []float64{0, 1}, Free: 1}}})
		}
		if f.hostile != nil {
			f.hostile(&st)
		}
		f.mu.Unlock()
		for _, w := range st.Workers {
			st.WorkerSummary.Add(w)
		}
		if r.URL.Query().Get(wire.ClusterWorkersParam) == "false" {
			st.Workers = []wire.WorkerStatus{}
		}
		if r.URL.Query().Get(wire.ClusterCompletedParam) == "false" {
			st.CompletedApps, st.CompletedDrivers = []wire.AppStatus{}, []wire.DriverStatus{}
		}
		httpx.WriteJSON(w, 200, st)
	})
	mux.HandleFunc("POST /v1/drivers", testproc.HandleJSON(func(r *http.Request, d wire.DriverDescription) (any, error) {
		f.mu.Lock()
		f.drivers = append(f.drivers, d)
		f.keys = append(f.keys, r.Header.Get(wire.IdempotencyKeyHeader))
		f.mu.Unlock()
		return wire.Submitted{ID: "driver-1"}, nil
	}))
	mux.HandleFunc("GET /v1/drivers/{id}", func(w http.ResponseWriter, r *http.Request) {
		st := wire.DriverStatus{ID: r.PathValue("id"), State: wire.DriverFinished}
		switch st.ID {
		case "driver-live":
			st.State = wire.DriverRunning
		case "driver-bad":
			st.State = wire.DriverFailed
		case "driver-hostile": // ended with a message that would act on a terminal
			st.State, st.Message = wire.DriverFailed, hostileText
		case "driver-gone": // an error that echoes what it was asked, raw
			httpx.WriteErr(w, r, httpx.Errorf(http.StatusNotFound, "unknown driver %s", hostileText))
			return
		}
		httpx.WriteJSON(w, 200, st)
	})
	mux.HandleFunc("DELETE /v1/drivers/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.kills = append(f.kills, "driver:"+r.PathValue("id"))
		f.mu.Unlock()
		httpx.WriteJSON(w, 200, wire.DriverStatus{ID: r.PathValue("id"), State: wire.DriverKilled})
	})
	mux.HandleFunc("GET /v1/drivers/{id}/logs/{stream}", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("line 1 of " + r.PathValue("stream") + "\nline 2 of " + r.PathValue("stream") + "\n"))
	})
	mux.HandleFunc("POST /v1/apps", testproc.HandleJSON(func(_ *http.Request, d wire.AppDescription) (any, error) {
		f.mu.Lock()
		f.apps = append(f.apps, d)
		f.mu.Unlock()
		return wire.Submitted{ID: "app-1"}, nil
	}))
	mux.HandleFunc("POST /v1/apps/{id}/unregister", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.unregisters++
		f.mu.Unlock()
		f.removed <- wire.AppFinished
		w.WriteHeader(200)
	})
	mux.HandleFunc("GET /v1/apps/{id}/events", f.events)
	// app-done ended an hour ago; any other app runs until killed.
	mux.HandleFunc("GET /v1/apps/{id}", func(w http.ResponseWriter, r *http.Request) {
		st := wire.AppStatus{ID: r.PathValue("id"), State: wire.AppRunning}
		if st.ID == "app-done" {
			ended := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			st.State, st.EndedAt = wire.AppKilled, &ended
		}
		httpx.WriteJSON(w, 200, st)
	})
	mux.HandleFunc("DELETE /v1/apps/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.kills = append(f.kills, r.PathValue("id"))
		f.mu.Unlock()
		httpx.WriteJSON(w, 200, wire.AppStatus{ID: r.PathValue("id"), State: wire.AppKilled})
	})
	mux.HandleFunc(wire.MasterAPI.ClearWorker.Mux(), func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("id"); id == "worker-a" {
			httpx.WriteJSON(w, 200, wire.WorkerStatus{ID: id, State: wire.WorkerAlive})
			return
		}
		httpx.WriteErr(w, r, httpx.Errorf(http.StatusNotFound, "unknown worker %s", r.PathValue("id")))
	})
	f.srv = httptest.NewServer(httpx.RequireSecret(testSecret, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answeredProbe(w, r) {
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	})))
	t.Cleanup(f.srv.Close)
	return f
}

// events streams a snapshot and an executor, then the app's removal when
// the test (or an unregister) pushes its final state.
func (f *fakeMaster) events(w http.ResponseWriter, r *http.Request) {
	enc := json.NewEncoder(w)
	app := &wire.AppStatus{ID: "app-1", Name: "loop", State: wire.AppRunning, CoresGranted: 2}
	enc.Encode(wire.AppEvent{Type: wire.EventSnapshot, AppID: "app-1", App: app})
	enc.Encode(wire.AppEvent{Type: wire.EventExecutorAdded, AppID: "app-1",
		Executor: &wire.ExecutorStatus{ID: 0, WorkerID: "worker-a", Cores: 2, State: wire.ExecutorLaunching}})
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
	case st := <-f.removed:
		f.mu.Lock()
		app.State, app.Message = st, cmp.Or(f.endMessage, "the end")
		f.mu.Unlock()
		enc.Encode(wire.AppEvent{Type: wire.EventAppRemoved, AppID: "app-1", App: app})
	}
}

func testCluster() wire.ClusterStatus {
	now := time.Now()
	return wire.ClusterStatus{
		MasterID: "master-1", Status: wire.MasterAlive, View: wire.ViewLeader,
		Leader: "http://127.0.0.1:7077", LeaderID: "master-1", Epoch: 4,
		Workers: []wire.WorkerStatus{{ID: "worker-a", Address: "http://127.0.0.1:8081", Cores: 8, CoresUsed: 2,
			MemoryMB: 8192, MemoryUsedMB: 1024, State: wire.WorkerAlive, LastHeartbeat: now, DiskFull: "work dir /w: 3 MiB free"}},
		ActiveApps: []wire.AppStatus{{ID: "app-1", Name: "pi", State: wire.AppRunning, CoresGranted: 2, MaxCores: 4, Queue: "etl", Priority: 5,
			Executors: []wire.ExecutorStatus{{ID: 0, WorkerID: "worker-a", Cores: 2, State: wire.ExecutorRunning}}}},
		CompletedApps:    []wire.AppStatus{{ID: "app-0", Name: "old-job", State: wire.AppKilled}},
		ActiveDrivers:    []wire.DriverStatus{{ID: "driver-2", State: wire.DriverRunning, WorkerID: "worker-a", Queue: "adhoc"}},
		CompletedDrivers: []wire.DriverStatus{{ID: "driver-1", State: wire.DriverFinished}},
	}
}

// berth runs the binary with env (on top of a clean BERTH_* environment).
func berth(t *testing.T, env []string, args ...string) testproc.Result {
	t.Helper()
	return testproc.RunBinary(t, berthBin, append(cleanEnv(), env...), args...)
}

func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH_") {
			out = append(out, kv)
		}
	}
	return out
}

// requestLog returns the requests the master got, in order.
func (f *fakeMaster) requestLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fakeMaster) env() []string {
	return []string{"BERTH_MASTER=" + f.srv.URL, "BERTH_SECRET=" + testSecret}
}

func TestSubmitFlagsFromEnv(t *testing.T) {
	f := newFakeMaster(t)
	env := append(f.env(), "BERTH_SUBMIT_CORES=3", "BERTH_SUBMIT_MEMORY=2g", "BERTH_SUBMIT_SUPERVISE=true", "BERTH_SUBMIT_ENV=A=1,B=x=y")
	res := berth(t, env, "submit", "--", "/opt/pi", "--tasks", "5")
	if res.Code != 0 || strings.TrimSpace(res.Stdout) != "driver-1" {
		t.Fatalf("submit: %+v", res)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.drivers[0]
	if d.Cores != 3 || d.MemoryMB != 2048 || !d.Supervise || d.Env["A"] != "1" || d.Env["B"] != "x=y" ||
		strings.Join(d.Command, " ") != "/opt/pi --tasks 5" {
		t.Fatalf("driver description %+v", d)
	}
}

// submit sends its idempotency key, the one given or a fresh one; when it
// gives up with the outcome unknown it prints the key to retry with.
func TestSubmitIdempotencyKey(t *testing.T) {
	f := newFakeMaster(t)
	if res := berth(t, f.env(), "submit", "--idempotency-key", "nightly-2026-11-22", "--", "x"); res.Code != 0 {
		t.Fatalf("submit: %+v", res)
	}
	if res := berth(t, f.env(), "submit", "--", "x"); res.Code != 0 {
		t.Fatalf("submit: %+v", res)
	}
	f.mu.Lock()
	keys := append([]string(nil), f.keys...)
	f.mu.Unlock()
	if len(keys) != 2 || keys[0] != "nightly-2026-11-22" || keys[1] == "" || keys[1] == keys[0] {
		t.Fatalf("keys sent: %q", keys)
	}

	// A master that reads the submission and drops the connection.
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer drop.Close()
	res := berth(t, []string{"BERTH_MASTER=" + drop.URL, "BERTH_TIMEOUT=300ms"}, "submit", "--idempotency-key", "k1", "--", "x")
	if res.Code == 0 || !strings.Contains(res.Stderr, "outcome unknown") || !strings.Contains(res.Stderr, "\nthe driver may have been submitted") ||
		!strings.Contains(res.Stderr, "--idempotency-key k1") {
		t.Fatalf("submit against a master that drops it: %+v", res)
	}
}

func TestBadValuesNameTheFlag(t *testing.T) {
	f := newFakeMaster(t)
	cases := []testproc.BadFlag{
		{Args: []string{"submit", "--memory", "12q", "--", "x"}, Flag: "--memory"},
		{Env: []string{"BERTH_SUBMIT_MEMORY=lots"}, Args: []string{"submit", "--", "x"}, Flag: "--memory"},
		{Args: []string{"submit", "--cores", "abc", "--", "x"}, Flag: "--cores"},
		{Args: []string{"submit", "--resource", "gpu", "--", "x"}, Flag: "--resource"},
		{Args: []string{"submit", "--resource", "gpu=1.5", "--", "x"}, Flag: "--resource"},
		{Args: []string{"submit", "--resource", "gpu=-1", "--", "x"}, Flag: "--resource"},
		{Args: []string{"run", "--executor-resource", "GPU=1", "--", "x"}, Flag: "--executor-resource"},
		{Args: []string{"run", "--executor-resource", "gpu=0.0001", "--", "x"}, Flag: "--executor-resource"},
		{Args: []string{"run", "--executor-resource", "gpu=1", "--executor-resource", "gpu=2", "--", "x"}, Flag: "--executor-resource"},
		{Env: []string{"BERTH_SUBMIT_CORES=abc"}, Args: []string{"submit", "--", "x"}, Flag: "--cores"},
		{Args: []string{"submit", "--env", "NOEQUALS", "--", "x"}, Flag: "--env"},
		{Args: []string{"run", "--executor-memory", "0", "--", "x"}, Flag: "--executor-memory"},
		{Args: []string{"logs", "driver", "d1", "--tail", "many"}, Flag: "--tail"},
		{Env: []string{"BERTH_TIMEOUT=soon"}, Args: []string{"status"}, Flag: "--timeout"},
		{Env: []string{"BERTH_MASTER=127.0.0.1:7077"}, Args: []string{"status"}, Flag: "--master"},
		{Args: []string{"worker", "drain", "w1", "--deadline", "0s"}, Flag: "--deadline"},
		{Args: []string{"worker", "drain", "w1", "--deadline", "200h"}, Flag: "--deadline"},
		// The command's own bad flag is named before a client is made.
		{Args: []string{"--tls-ca-file", "/nonexistent", "worker", "drain", "w1", "--deadline", "0s"}, Flag: "--deadline"},
	}
	testproc.CheckBadFlags(t, berthBin, 1, append(cleanEnv(), f.env()...), cases)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.drivers) != 0 || len(f.apps) != 0 {
		t.Fatal("a bad flag still submitted something")
	}
}

func TestWrongSecret(t *testing.T) {
	f := newFakeMaster(t)
	res := berth(t, []string{"BERTH_MASTER=" + f.srv.URL, "BERTH_SECRET=nope"}, "status")
	if res.Code != 1 || !strings.Contains(res.Stderr, "secret") {
		t.Fatalf("status with the wrong secret: %+v", res)
	}
}

func TestStatus(t *testing.T) {
	f := newFakeMaster(t)
	res := berth(t, f.env(), "status")
	if res.Code != 0 {
		t.Fatalf("status: %+v", res)
	}
	for _, want := range []string{"master-1", "ALIVE", "leader", "epoch 4", "worker-a", "http://127.0.0.1:8081",
		"2/8", "1g/8g", "ALIVE, DISK FULL", "worker-a: work dir /w: 3 MiB free", "app-1", "pi", "RUNNING:1", "2/4", "etl (priority 5)", "app-0", "old-job", "KILLED", "driver-2", "adhoc", "driver-1", "FINISHED"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, res.Stdout)
		}
	}

	res = berth(t, f.env(), "status", "--json")
	var st wire.ClusterStatus
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &st) != nil {
		t.Fatalf("status --json: %+v", res)
	}
	if st.MasterID != "master-1" || len(st.Workers) != 1 || st.ActiveApps[0].Executors[0].State != wire.ExecutorRunning ||
		st.ActiveApps[0].Queue != "etl" || st.ActiveApps[0].Priority != 5 || st.ActiveDrivers[0].Queue != "adhoc" {
		t.Fatalf("status --json decoded to %+v", st)
	}
}

// A cluster of more than 50 workers: berth status asks only for their
// summary (with their GPUs) and says how to list them; --workers lists them
// all.
func TestStatusSummarisesManyWorkers(t *testing.T) {
	f := newFakeMaster(t)
	f.mu.Lock()
	f.moreWorkers = 120
	f.mu.Unlock()
	res := berth(t, f.env(), "status")
	if res.Code != 0 || !strings.Contains(res.Stdout, "Workers: 121 (121 alive, 0 decommissioning, 0 dead, 0 other); cores 2/488 used") ||
		!strings.Contains(res.Stdout, "Resources: gpu 120/240 free") ||
		!strings.Contains(res.Stdout, "berth status --workers") || strings.Contains(res.Stdout, "worker-x000") {
		t.Fatalf("status of 121 workers: %+v", res)
	}
	if reqs := f.requestLog(); len(reqs) != 1 || reqs[0] != "GET /v1/cluster?workers=false" {
		t.Errorf("requests %v: want one summary request", reqs)
	}
	res = berth(t, f.env(), "status", "--workers")
	if res.Code != 0 || !strings.Contains(res.Stdout, "worker-x119") || strings.Contains(res.Stdout, "--workers lists") {
		t.Fatalf("status --workers: %+v", res)
	}
}

// What the commands print and how they exit; flags may follow the ID.
func TestCommandsPrint(t *testing.T) {
	f := newFakeMaster(t)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"submit", "--wait", "--poll", "10ms", "--", "x"}, 0, "driver-1\nFINISHED\n"},
		{[]string{"wait", "driver", "driver-bad", "--timeout", "5s"}, 1, "FAILED\n"},
		// wait's own --timeout must not shadow the global one.
		{[]string{"wait", "driver", "driver-1"}, 0, "FINISHED\n"},
		{[]string{"logs", "driver", "driver-1", "--stderr", "--tail", "1"}, 0, "line 2 of stderr\n"},
	} {
		if res := berth(t, f.env(), tc.args...); res.Code != tc.code || res.Stdout != tc.stdout {
			t.Fatalf("%q: %+v, want exit %d and stdout %q", tc.args, res, tc.code, tc.stdout)
		}
	}
	requests := f.requestLog()
	if last := requests[len(requests)-1]; !strings.HasPrefix(last, "GET /v1/drivers/driver-1/logs/stderr?tail=") {
		t.Fatalf("logs sent %q", last)
	}
	res := berth(t, f.env(), "driver", "driver-1")
	var d wire.DriverStatus
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &d) != nil || d.State != wire.DriverFinished {
		t.Fatalf("driver: %+v", res)
	}
}

func TestHelpAfterIDDoesNotAct(t *testing.T) {
	f := newFakeMaster(t)
	res := berth(t, f.env(), "kill", "app", "app-1", "--help")
	if res.Code != 0 || !strings.Contains(res.Stdout, "kill an app") {
		t.Fatalf("kill app ID --help: %+v", res)
	}
	if requests := f.requestLog(); len(requests) != 0 {
		t.Fatalf("--help sent %v", requests)
	}
}

// A flag or a command berth does not know: named as typed, with a hint,
// exit 2 (it said "flag --provided but not defined: -bogus", and "No help
// topic for 'foo'" with exit 3, berth's code for "certainly not done").
// One of berth's own flags after the command says where it goes.
func TestUnknownFlagsAndCommandsExit2WithAHint(t *testing.T) {
	for _, c := range []struct {
		args       []string
		want, hint string
	}{
		{[]string{"--bogus"}, "berth: unknown flag --bogus\n", "berth --help lists its flags"},
		{[]string{"status", "--master", "http://127.0.0.1:1"}, "unknown flag --master for berth status", "give it before the command (berth --master VALUE status ...)"},
		{[]string{"foo"}, `unknown command "foo"`, "berth takes submit, run, status"},
		{[]string{"kill", "nonexistent"}, `kill: unknown subcommand "nonexistent"`, "berth kill takes app, driver"},
		{[]string{"kill", "app", "--bogus", "x"}, "unknown flag --bogus", "berth kill app --help lists its flags"},
		{[]string{"submit", "--cores"}, "flag --cores needs a value", "berth submit --help"},
		// Arguments missing or extra are the command line's mistake too
		// (they exited 1, as a refused value does).
		{[]string{"kill", "app"}, "missing arguments", "usage: berth kill app ID"},
		{[]string{"app"}, "missing arguments", "usage: berth app ID"},
		{[]string{"queue", "set"}, "missing arguments", "usage: berth queue set NAME"},
		{[]string{"kill", "app", "a", "b"}, `unexpected arguments ["b"]`, "usage: berth kill app ID"},
	} {
		res := berth(t, cleanEnv(), c.args...)
		if res.Code != 2 || !strings.Contains(res.Stderr, c.want) || !strings.Contains(res.Stderr, c.hint) || strings.Contains(res.Stderr, "provided") {
			t.Errorf("berth %s: %+v; want exit 2, %q and %q", strings.Join(c.args, " "), res, c.want, c.hint)
		}
	}
	// A negative number is a value given, not a flag ("unknown flag --1").
	res := berth(t, cleanEnv(), "--master", "http://127.0.0.1:1", "app", "limit", "app-1", "-1")
	if res.Code != 1 || !strings.Contains(res.Stderr, `limit "-1": want a number of executors, 0 or more`) {
		t.Errorf("berth app limit app-1 -1: %+v; want exit 1 saying the limit is refused", res)
	}
}

// Killing an app that had ended said "killed app" and exited 0: it says
// it had ended, and sends no kill. berth status --completed=false leaves
// the completed apps and drivers out, as the API's ?completed=false.
func TestKillOfAnEndedAppAndStatusWithoutTheCompleted(t *testing.T) {
	f := newFakeMaster(t)
	res := berth(t, f.env(), "kill", "app", "app-done")
	if res.Code != 0 || !strings.Contains(res.Stdout, "app app-done had already ended KILLED at ") || !strings.Contains(res.Stdout, "nothing to kill") {
		t.Errorf("kill of an ended app: %+v", res)
	}
	res = berth(t, f.env(), "kill", "app", "app-live")
	if res.Code != 0 || res.Stdout != "killed app app-live\n" {
		t.Errorf("kill of a running app: %+v", res)
	}
	// A driver likewise (it printed "killed driver" for one that had ended).
	res = berth(t, f.env(), "kill", "driver", "driver-1")
	if res.Code != 0 || !strings.Contains(res.Stdout, "driver driver-1 had already ended FINISHED") || !strings.Contains(res.Stdout, "nothing to kill") {
		t.Errorf("kill of an ended driver: %+v", res)
	}
	res = berth(t, f.env(), "kill", "driver", "driver-live")
	if res.Code != 0 || res.Stdout != "killed driver driver-live\n" {
		t.Errorf("kill of a running driver: %+v", res)
	}
	f.mu.Lock()
	kills := slices.Clone(f.kills)
	f.mu.Unlock()
	if !slices.Equal(kills, []string{"app-live", "driver:driver-live"}) {
		t.Errorf("kills sent: %v, want only app-live's and driver-live's", kills)
	}
	all := berth(t, f.env(), "status")
	active := berth(t, f.env(), "status", "--completed=false")
	if !strings.Contains(all.Stdout, "Completed apps") || strings.Contains(active.Stdout, "Completed apps") || strings.Contains(active.Stdout, "Completed drivers") {
		t.Errorf("status --completed=false still lists the completed:\n%s", active.Stdout)
	}
}

// answeredProbe answers a client's liveness probe (GET /healthz, before
// its first request: client/silent.go) as a master does, and reports
// whether r was one: the fakes record only the calls themselves.
func answeredProbe(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Path != wire.MasterAPI.Health.Path() {
		return false
	}
	_, _ = w.Write([]byte("ok\n"))
	return true
}
