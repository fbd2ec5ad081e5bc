package worker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

func dur(d time.Duration) *wire.Duration { v := wire.Duration(d); return &v }
func num(n int) *int                     { return &n }

// The count of one attempt's checks: starting until every check has
// passed, healthy after; failures in the start period do not count; a
// pass starts the count again; failures in a row make it unhealthy, once.
func TestAttemptHealthCounts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	h := newAttemptHealth([]wire.Check{
		{Name: "web", Failures: num(2), StartPeriod: dur(10 * time.Second)},
		{Name: "db", Failures: num(3)},
	}, t0)
	step := func(i int, ok bool, s int, wantHealth wire.Health, wantDead bool) {
		t.Helper()
		changed, dead := h.result(i, ok, "no answer", at(s))
		if changed != wantHealth || (dead != "") != wantDead {
			t.Fatalf("check %d %v at %ds: changed %q dead %q; want %q and dead %v", i, ok, s, changed, dead, wantHealth, wantDead)
		}
	}
	step(0, false, 1, "", false)                // in web's start period: not counted
	step(0, false, 2, "", false)                // nor this
	step(0, true, 3, "", false)                 // web passed; db has not: still starting
	step(1, true, 4, wire.HealthHealthy, false) // both passed
	step(1, false, 5, "", false)                // db: 1 of 3
	step(1, false, 6, "", false)                // 2 of 3
	step(1, true, 7, "", false)                 // a pass: from 0 again
	step(1, false, 8, "", false)
	step(1, false, 9, "", false)
	step(0, false, 11, "", false) // web: 1 of 2, past its start period
	_, dead := h.result(0, false, "no answer", at(12))
	if !strings.HasPrefix(dead, "unhealthy: check web: no answer") {
		t.Fatalf("web's second failure in a row: %q, want unhealthy naming the check", dead)
	}
	if changed, again := h.result(1, false, "x", at(13)); changed != "" || again != "" {
		t.Error("a result after the attempt was found unhealthy still counts")
	}
}

// freePortIn is a port of r nobody listens on now.
func freePortIn(t *testing.T, r wire.PortRange) int {
	t.Helper()
	for p := r.First; p <= r.Last; p++ {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatalf("no free port in %v", r)
	return 0
}

var testPorts = wire.PortRange{First: 41000, Last: 41999}

// A checked executor is starting, then healthy once its check passes;
// frozen (SIGSTOP), its checks time out and the worker kills it: FAILED,
// saying which check and why, within its interval × failures and a
// little; its port was in its environment.
func TestAFrozenCheckedExecutorIsKilled(t *testing.T) {
	fm, w := startParallel(t, func(c *Config) { c.PortRange = testPorts })
	port := freePortIn(t, testPorts)
	launch := launchOf("app-web", 0, helperCmd(t, "serve"), nil)
	launch.Ports = map[string]int{"http": port}
	launch.Checks = []wire.Check{{Name: "web", Type: wire.CheckHTTP, Port: "http", Path: "/health",
		Interval: dur(200 * time.Millisecond), Timeout: dur(100 * time.Millisecond), Failures: num(3)}}
	w.mustCall(200, "POST", "/v1/executors", launch)
	pid := w.runningPid("app-web", 0)
	testproc.Eventually(t, 5*time.Second, "a report saying healthy", func() bool {
		for _, r := range fm.execReports("app-web", 0) {
			if r.State == wire.ExecutorRunning && r.Health == wire.HealthHealthy {
				return true
			}
		}
		return false
	})
	frozen := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	reps := fm.waitFinal(t, "app-web", 0)
	took := time.Since(frozen)
	last := reps[len(reps)-1]
	if last.State != wire.ExecutorFailed || last.Health != wire.HealthUnhealthy || !strings.HasPrefix(last.Message, "unhealthy: check web: no answer within its timeout") {
		t.Errorf("the frozen executor ended %s (%s) %q; want FAILED, unhealthy, naming the check", last.State, last.Health, last.Message)
	}
	// The process's own failure, not the worker's: a failing check must
	// not bench the worker for every tenant (HEALTH.md: what counts).
	if last.Cause != wire.CauseProcess {
		t.Errorf("an executor killed by its check ended with cause %q, want %q", last.Cause, wire.CauseProcess)
	}
	// 3 checks 200 ms apart, the first at most 200 ms after the freeze,
	// each timing out after 100 ms; then the kill and the report.
	if took > 3*200*time.Millisecond+100*time.Millisecond+time.Second {
		t.Errorf("killed %s after the freeze, want within interval × failures + a second", took)
	}
	if testproc.Alive(pid) {
		t.Error("the unhealthy process still runs")
	}
}

// A slow starter is not killed in its start period, though its check
// fails all along; past it, its failures count; an exec check runs with
// the process's environment, and its output is in the message.
func TestStartPeriodAndExecChecks(t *testing.T) {
	fm, w := startParallel(t, func(c *Config) { c.PortRange = testPorts })
	port := freePortIn(t, testPorts)
	const startPeriod = 1500 * time.Millisecond
	launch := launchOf("app-slow", 0, helperCmd(t, "sleep"), nil)
	launch.Ports = map[string]int{"http": port}
	launch.Checks = []wire.Check{{Name: "ready", Type: wire.CheckExec,
		Command:  []string{"sh", "-c", fmt.Sprintf(`test "$BERTH_PORT_HTTP" = %d && echo "not yet on $BERTH_PORT_HTTP" && exit 1`, port)},
		Interval: dur(200 * time.Millisecond), Timeout: dur(150 * time.Millisecond), Failures: num(2), StartPeriod: dur(startPeriod)}}
	started := time.Now()
	w.mustCall(200, "POST", "/v1/executors", launch)
	w.runningPid("app-slow", 0)
	reps := fm.waitFinal(t, "app-slow", 0)
	if took := time.Since(started); took < startPeriod {
		t.Errorf("killed %s after its start, within its start period of %s", took, startPeriod)
	}
	last := reps[len(reps)-1]
	if last.State != wire.ExecutorFailed || !strings.Contains(last.Message, fmt.Sprintf(`unhealthy: check ready: exited with code 1: "not yet on %d\n"`, port)) {
		t.Errorf("the slow starter ended %s %q; want FAILED quoting its check's output", last.State, last.Message)
	}
}

// A check that hangs past its timeout is killed and counts as a failure.
func TestAHangingCheckTimesOut(t *testing.T) {
	fm, w := startParallel(t, nil)
	launch := launchOf("app-hang", 0, helperCmd(t, "sleep"), nil)
	launch.Checks = []wire.Check{{Name: "stuck", Type: wire.CheckExec, Command: []string{"sleep", "60"},
		Interval: dur(200 * time.Millisecond), Timeout: dur(100 * time.Millisecond), Failures: num(2)}}
	w.mustCall(200, "POST", "/v1/executors", launch)
	reps := fm.waitFinal(t, "app-hang", 0)
	if last := reps[len(reps)-1]; last.State != wire.ExecutorFailed || !strings.Contains(last.Message, "unhealthy: check stuck: no answer within its timeout") {
		t.Errorf("ended %s %q; want FAILED, its check timed out", last.State, last.Message)
	}
}

// A supervised driver's restart policy: past its attempts within the
// interval, mode fail ends it FAILED saying so, instead of restarting it
// for ever.
func TestASupervisedDriversRestartPolicy(t *testing.T) {
	fm, w := startParallel(t, func(c *Config) { c.DriverRestartMin = 10 * time.Millisecond })
	d := driverLaunchOf("driver-flaky", true, helperCmd(t, "exit", "3"))
	d.Restart = &wire.RestartPolicy{Attempts: num(2), Interval: dur(time.Minute), Mode: wire.RestartFail}
	w.mustCall(200, "POST", "/v1/drivers", d)
	reps := fm.waitDriverFinal(t, "driver-flaky")
	last := reps[len(reps)-1]
	if last.State != wire.DriverFailed || !strings.Contains(last.Message, "restart policy: 3 failures within 1m0s, more than its 2 attempts") {
		t.Errorf("ended %s %q; want FAILED by its restart policy after 3 runs", last.State, last.Message)
	}
}

// The worker refuses ports outside its range and checks that do not hold.
func TestLaunchesWithBadPortsOrChecksRefused(t *testing.T) {
	_, w := startParallel(t, func(c *Config) { c.PortRange = testPorts })
	outside := launchOf("app-x", 0, helperCmd(t, "sleep"), nil)
	outside.Ports = map[string]int{"http": 80}
	if code, body := w.call("POST", "/v1/executors", outside); code != 400 || !strings.Contains(body, "outside this worker's --port-range") {
		t.Errorf("a port outside the range: %d %s", code, body)
	}
	badCheck := launchOf("app-x", 1, helperCmd(t, "sleep"), nil)
	badCheck.Checks = []wire.Check{{Name: "web", Type: wire.CheckHTTP, Port: "grpc"}}
	if code, body := w.call("POST", "/v1/executors", badCheck); code != 400 || !strings.Contains(body, `port \"grpc\"`) {
		t.Errorf("a check on an unknown port: %d %s", code, body)
	}
}

// An http check keeps its connection from check to check; one the process
// closed (an idle timeout, a restart of its server) is made anew at once,
// not counted as a failure; an answer outside 2xx-3xx fails, quoted.
func TestHTTPProbeKeepsAndRemakesItsConnection(t *testing.T) {
	status := 200
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		fmt.Fprint(w, "db down")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns++
		}
	}
	srv.Start()
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	var web httpProbe
	defer web.close()
	probe := func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return web.probe(ctx, "127.0.0.1", port, "/health")
	}
	for range 3 {
		if ok, why := probe(); !ok {
			t.Fatalf("probe: %s", why)
		}
	}
	if conns != 1 {
		t.Errorf("3 checks made %d connections, want 1 kept", conns)
	}
	srv.CloseClientConnections()
	if ok, why := probe(); !ok {
		t.Errorf("after the server closed the connection: %s; want a new one, and a pass", why)
	}
	status = 302
	if ok, why := probe(); !ok {
		t.Errorf("a 302: %s, want a pass", why)
	}
	status = 503
	if ok, why := probe(); ok || why != `GET /health answered 503: "db down"` {
		t.Errorf("a 503: %v %q", ok, why)
	}
}
