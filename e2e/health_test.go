package e2e

// Healthy processes with the real daemons (issue 22, docs/HEALTH.md): a
// service that stops answering, or is frozen, is replaced within its
// checks' interval × failures and a second; a slow starter is spared for
// its start period; an app failing on one worker only ends up on another;
// ports stay exclusive through a thousand launches and a failover.

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

func wdur(d time.Duration) *wire.Duration { v := wire.Duration(d); return &v }
func wint(n int) *int                     { return &n }

// checkedService is an app of one-core executors running healthsrv with
// an http check on its port http.
func checkedService(name string, max int, args []string, interval, timeout time.Duration, failures int, startPeriod time.Duration) wire.AppDescription {
	return wire.AppDescription{
		Name:                name,
		Command:             append([]string{healthBin}, args...),
		MaxCores:            max,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
		ProcessSpec: wire.ProcessSpec{Ports: []string{"http"}, Checks: []wire.Check{{Name: "web", Type: wire.CheckHTTP, Port: "http", Path: "/health",
			Interval: wdur(interval), Timeout: wdur(timeout), Failures: wint(failures), StartPeriod: wdur(startPeriod)}}},
	}
}

// healthyExecutor waits until app has one RUNNING, healthy executor, and
// returns it.
func (cl *cluster) healthyExecutor(app string, timeout time.Duration) wire.ExecutorStatus {
	cl.t.Helper()
	var got wire.ExecutorStatus
	cl.appWhen(app, timeout, "a healthy executor", func(a wire.AppStatus) error {
		for _, e := range a.Executors {
			if e.State == wire.ExecutorRunning && e.Health == wire.HealthHealthy {
				got = e
				return nil
			}
		}
		return fmt.Errorf("executors %+v", a.Executors)
	})
	return got
}

// servicePid is the pid of the healthsrv serving port.
func servicePid(t *testing.T, port int) int {
	t.Helper()
	pid := 0
	testproc.Eventually(t, 5*time.Second, fmt.Sprintf("the process serving port %d", port), func() error {
		for _, p := range testcluster.Marked(healthBin) {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.Pid))
			if strings.Contains(string(env), fmt.Sprintf("%s=%d\x00", wire.PortEnv("http"), port)) {
				pid = p.Pid
				return nil
			}
		}
		return fmt.Errorf("none")
	})
	return pid
}

// A service that stops answering its check, and one frozen with SIGSTOP,
// are killed and replaced within interval × failures + 1 s; the app hears
// executorUnhealthy; the message says which check and why.
func TestHealthReplacesAHungService(t *testing.T) {
	t.Parallel()
	const interval, timeout, failures = time.Second, 300 * time.Millisecond, 2
	bound := interval*failures + time.Second
	cl := startCluster(t, clusterSpec{masters: 1, workers: []string{"w1"}, cores: 2, memory: "1g"})
	for _, how := range []struct {
		name string
		sig  syscall.Signal
	}{{"stops answering", syscall.SIGUSR1}, {"frozen", syscall.SIGSTOP}} {
		app, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), checkedService("hung-"+how.sig.String(), 1, nil, interval, timeout, failures, 0))
		if err != nil {
			t.Fatal(err)
		}
		events := followEvents(t, cl.c, app)
		e := cl.healthyExecutor(app, 20*time.Second)
		// Past the relaunch backoff's window (an executor that ends within
		// 5 s of running has its replacement delayed): a service that
		// hangs after a while, as services do.
		healthy := time.Now()
		testproc.Eventually(t, 10*time.Second, "5 s of running", func() bool { return time.Since(healthy) > 5*time.Second })
		pid := servicePid(t, e.Ports["http"])
		stopped := time.Now()
		if err := syscall.Kill(pid, how.sig); err != nil {
			t.Fatal(err)
		}
		var replaced time.Duration
		cl.appWhen(app, 3*bound, "a healthy replacement", func(a wire.AppStatus) error {
			for _, x := range a.Executors {
				if x.ID != e.ID && x.State == wire.ExecutorRunning {
					replaced = time.Since(stopped)
					return nil
				}
			}
			return fmt.Errorf("executors %+v", a.Executors)
		})
		t.Logf("%s: replaced (RUNNING) %s after it stopped answering (bound %s)", how.name, replaced.Round(time.Millisecond), bound)
		if replaced > bound {
			t.Errorf("%s: replaced %s after it stopped answering, want within interval × failures + 1 s = %s", how.name, replaced, bound)
		}
		evs := events.waitFor(t, 5*time.Second, "executorUnhealthy", func(evs []appEvent) error {
			for _, ev := range evs {
				if ev.Type == wire.EventExecutorUnhealthy {
					return nil
				}
			}
			return fmt.Errorf("events %s", eventTypes(evs))
		})
		for _, ev := range evs {
			if ev.Type == wire.EventExecutorUnhealthy && (ev.Executor == nil || ev.Executor.State != wire.ExecutorFailed ||
				!strings.HasPrefix(ev.Executor.Message, "unhealthy: check web: no answer within its timeout")) {
				t.Errorf("%s: executorUnhealthy carries %+v", how.name, ev.Executor)
			}
		}
		if testproc.Alive(pid) {
			t.Errorf("%s: the unhealthy process %d still runs", how.name, pid)
		}
		if _, err := cl.c.KillApp(callCtx(t, 20*time.Second), app); err != nil {
			t.Fatal(err)
		}
	}
}

// A slow starter (it listens 3 s after it starts) with a start period of
// 4 s is never killed: its check fails until it listens, but not past its
// start period; it becomes healthy and stays.
func TestHealthSparesASlowStarter(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, workers: []string{"w1"}, cores: 1, memory: "1g"})
	app, err := cl.c.RegisterApp(callCtx(t, 20*time.Second),
		checkedService("slow", 1, []string{"--slow", "3s"}, 500*time.Millisecond, 200*time.Millisecond, 2, 4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, app)
	e := cl.healthyExecutor(app, 20*time.Second)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) { // it stays healthy: polled, each look checked
		a, err := cl.c.App(callCtx(t, 5*time.Second), app)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range a.Executors {
			if x.ID != e.ID || x.State != wire.ExecutorRunning {
				t.Fatalf("the slow starter's executors %+v; want %d RUNNING, never replaced", a.Executors, e.ID)
			}
		}
		time.Sleep(200 * time.Millisecond) // the poll's pace, not a synchronisation
	}
}

// An app whose executor fails on one worker only is kept off it after two
// failures, and runs on another; its status lists the exclusion, and
// berth worker clear ends it.
func TestHealthKeepsAnAppOffAWorkerItFailsOn(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, workers: []string{"w1"}, cores: 1, memory: "1g"})
	desc := checkedService("picky", 1, []string{"--fail-on", "w1"}, time.Second, 300*time.Millisecond, 3, 0)
	app, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), desc)
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, app)
	cl.appWhen(app, 20*time.Second, "two failures on w1", func(a wire.AppStatus) error {
		n := 0
		for _, e := range a.Executors {
			if e.WorkerID == "w1" && e.State == wire.ExecutorFailed {
				n++
			}
		}
		if n < 2 {
			return fmt.Errorf("%d failures", n)
		}
		return nil
	})
	cl.addWorker("w2", 1, "1g")
	a := cl.appWhen(app, 20*time.Second, "running on w2, kept off w1", func(a wire.AppStatus) error {
		for _, e := range a.Executors {
			if e.State == wire.ExecutorRunning && e.WorkerID == "w2" && len(a.Excluded) == 1 && a.Excluded[0].WorkerID == "w1" {
				return nil
			}
		}
		return fmt.Errorf("executors %+v, excluded %+v", a.Executors, a.Excluded)
	})
	if !strings.Contains(a.Excluded[0].Reason, "failed there") {
		t.Errorf("the exclusion says %q", a.Excluded[0].Reason)
	}
	if out, err := cl.berthCLI("worker", "clear", "w1"); err != nil {
		t.Fatalf("berth worker clear w1: %v: %s", err, out)
	}
	cl.appWhen(app, 10*time.Second, "no exclusion once cleared", func(a wire.AppStatus) error {
		if len(a.Excluded) != 0 {
			return fmt.Errorf("excluded %+v", a.Excluded)
		}
		return nil
	})
}

// A thousand launches of executors asking for a port on one worker, with
// the leader killed half way: no port is held by two live executors at any
// look, and each executor's process binds its port (a port given twice
// would make the second fail: none fails).
func TestHealthPortsExclusiveUnderChurn(t *testing.T) {
	t.Parallel()
	const launches = 1000
	cl := startCluster(t, clusterSpec{masters: 3, workers: []string{"w1"}, cores: 4, memory: "2g",
		flags: []string{"--worker-timeout", "10s"}})
	desc := checkedService("churn", 4, nil, time.Minute, time.Second, 3, 0) // checks far apart: not what is tested here
	app, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), desc)
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, app)
	seen := map[int]bool{} // executor ids launched
	var mu sync.Mutex
	killedLeader := false
	for len(seen) < launches {
		a := cl.appWhen(app, 30*time.Second, "4 RUNNING executors, distinct ports", func(a wire.AppStatus) error {
			ports := map[int]int{}
			running := 0
			for _, e := range a.Executors {
				if e.State == wire.ExecutorFailed {
					return fmt.Errorf("stop: executor %d FAILED: %s", e.ID, e.Message)
				}
				if e.State.Finished() {
					continue
				}
				if other, dup := ports[e.Ports["http"]]; dup {
					return fmt.Errorf("stop: port %d held by executors %d and %d", e.Ports["http"], other, e.ID)
				}
				ports[e.Ports["http"]] = e.ID
				if e.State == wire.ExecutorRunning {
					running++
				}
			}
			if running < 4 {
				return fmt.Errorf("%d RUNNING", running)
			}
			return nil
		})
		var ids []int
		for _, e := range a.Executors {
			if e.State == wire.ExecutorRunning {
				mu.Lock()
				seen[e.ID] = true
				mu.Unlock()
				ids = append(ids, e.ID)
			}
		}
		if !killedLeader && len(seen) >= launches/2 {
			leader, _ := cl.leader(10 * time.Second)
			leader.Proc().Kill()
			killedLeader = true
			cl.leader(30*time.Second, leader)
		}
		if err := cl.c.KillExecutors(callCtx(t, 30*time.Second), app, ids); err != nil {
			t.Fatal(err)
		}
	}
	a, err := cl.c.App(callCtx(t, 10*time.Second), app)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range a.Executors {
		if e.State == wire.ExecutorFailed {
			t.Errorf("executor %d FAILED: %s (a port given twice?)", e.ID, e.Message)
		}
	}
	t.Logf("%d executors launched with a port each, the leader killed after %d", len(seen), launches/2)
}

// Bad checks are refused with a 400 naming what is wrong, nothing
// registered; a worker whose port range is spent places no more of an
// app asking for ports, and the app says why.
func TestHealthBadInput(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, cores: 4, memory: "1g"})
	for _, c := range []struct {
		name string
		body string
		want string
	}{
		{"unknown port", `{"command":["x"],"ports":["http"],"checks":[{"name":"web","type":"http","port":"grpc"}]}`, `port \"grpc\" is not one of`},
		{"zero interval", `{"command":["x"],"ports":["http"],"checks":[{"name":"web","type":"tcp","port":"http","interval":"0s"}]}`, "interval 0s"},
		{"negative interval", `{"command":["x"],"ports":["http"],"checks":[{"name":"web","type":"tcp","port":"http","interval":"-5s"}]}`, "interval -5s"},
		{"number interval", `{"command":["x"],"ports":["http"],"checks":[{"name":"web","type":"tcp","port":"http","interval":5}]}`, "want a duration as a string"},
		{"exec without command", `{"command":["x"],"checks":[{"name":"ready","type":"exec"}]}`, "needs a command"},
		{"bad restart mode", `{"command":["x"],"restart":{"mode":"sometimes"}}`, `mode \"sometimes\"`},
		{"bad label", `{"command":["x"],"ports":["Web"]}`, `label \"Web\"`},
	} {
		a, err := call("POST", cl.Masters[0].URL+"/v1/apps", secret, []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if a.status != 400 || !strings.Contains(a.body, c.want) {
			t.Errorf("%s: %d %s; want 400 saying %q", c.name, a.status, strings.TrimSpace(a.body), c.want)
		}
	}
	if st := cl.mustStatus(); len(st.ActiveApps) != 0 {
		t.Fatalf("bad apps registered: %+v", st.ActiveApps)
	}

	// A worker of two ports, an app of three executors asking one each.
	spec := workerSpec("w2", 4, "1g")
	spec.Flags = append(spec.Flags, "--port-range", "31998-31999")
	if _, err := cl.AddWorker(spec); err != nil {
		t.Fatal(err)
	}
	cl.waitWorkers(20*time.Second, "w2")
	app, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), checkedService("ports", 3, nil, time.Minute, time.Second, 3, 0))
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, app)
	cl.appWhen(app, 20*time.Second, "2 executors and a reason for the third", func(a wire.AppStatus) error {
		if n := len(liveExecutors(a)); n != 2 || !strings.Contains(a.Waiting, "free ports in its --port-range") {
			return fmt.Errorf("%d executors, waiting %q", n, a.Waiting)
		}
		return nil
	})
}

// healthSoak is how long TestHealthNoFalsePositivesUnderLoad saturates its
// worker: BERTH_HEALTH_SOAK (make soak: 5 minutes), else 20 s.
func healthSoak(t *testing.T) time.Duration {
	if s := os.Getenv("BERTH_HEALTH_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("BERTH_HEALTH_SOAK: %v", err)
		}
		return d
	}
	return 20 * time.Second
}

// Healthy checked services on a worker whose two cores are saturated by
// other work are never found unhealthy: no false positives.
func TestHealthNoFalsePositivesUnderLoad(t *testing.T) {
	soak := healthSoak(t)
	cl := startCluster(t, clusterSpec{masters: 1, workers: []string{"w1"}, cores: 6, memory: "2g"})
	// Two spinning executors: both cores of this machine busy.
	burn, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{Name: "burn",
		Command: []string{"/bin/sh", "-c", "while :; do :; done; : " + cl.marker}, MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 16})
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, burn)
	checked, err := cl.c.RegisterApp(callCtx(t, 20*time.Second),
		checkedService("checked", 4, nil, time.Second, time.Second, 3, 0))
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, checked)
	cl.appWhen(checked, 30*time.Second, "4 healthy executors", func(a wire.AppStatus) error {
		n := 0
		for _, e := range a.Executors {
			if e.State == wire.ExecutorRunning && e.Health == wire.HealthHealthy {
				n++
			}
		}
		if n != 4 {
			return fmt.Errorf("%d healthy", n)
		}
		return nil
	})
	end := time.Now().Add(soak)
	for time.Now().Before(end) {
		a, err := cl.c.App(callCtx(t, 10*time.Second), checked)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range a.Executors {
			if e.State != wire.ExecutorRunning {
				t.Fatalf("under load, executor %d of the checked app is %s %q: a false positive", e.ID, e.State, e.Message)
			}
		}
		time.Sleep(time.Second) // the look's pace, not a synchronisation
	}
	t.Logf("4 checked services stayed healthy for %s beside 2 cores spinning", soak)
}
