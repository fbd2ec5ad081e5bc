package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// hostileText would act on the terminal if printed raw: it retitles the
// window (OSC ... BEL), clears the screen (ESC [2J, then the C1 CSI 2J),
// reverses what follows (RLO), and starts a line of its own that looks
// like berth's.
const hostileText = "\x1b]0;pwned\x07\x1b[2J\u009b2J\u202eevil\x7f\nberth: forged"

// hostileEscaped is hostileText as berth shows it.
const hostileEscaped = `\x1b]0;pwned\a\x1b[2J\u009b2J\u202eevil\x7f\nberth: forged`

// checkNoRawControls fails the test if out holds one of hostileText's
// controls raw, or its forged line.
func checkNoRawControls(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\u009b", "\u202e", "\x7f", "\nberth: forged"} {
		if strings.Contains(out, c) {
			t.Errorf("%s holds %q raw:\n%q", what, c, out)
		}
	}
}

// An app's name, the messages, a worker's limits: berth status shows them
// escaped, in their columns, and --json keeps them (escaped in the JSON
// text, the same strings once decoded).
func TestStatusEscapesWhatItShows(t *testing.T) {
	f := newFakeMaster(t)
	f.mu.Lock()
	f.hostile = func(st *wire.ClusterStatus) {
		st.ActiveApps[0].Name = hostileText
		st.ActiveApps[0].Message = hostileText
		st.Workers[0].Limits = hostileText
		st.ActiveDrivers[0].Waiting = hostileText
	}
	f.mu.Unlock()

	res := berth(t, f.env(), "status")
	if res.Code != 0 {
		t.Fatalf("status: %+v", res)
	}
	checkNoRawControls(t, "berth status", res.Stdout)
	if n := strings.Count(res.Stdout, hostileEscaped); n != 4 {
		t.Errorf("the escaped text shows %d times, want 4 (name, message, limits, waiting):\n%s", n, res.Stdout)
	}
	esc := regexp.QuoteMeta(hostileEscaped)
	if appRow := regexp.MustCompile(`(?m)^app-1 +` + esc + ` +RUNNING +2/4 +RUNNING:1 +etl \(priority 5\) +` + esc + `$`); !appRow.MatchString(res.Stdout) {
		t.Errorf("no row of app-1 with its name, state, cores, executors, queue and message in turn:\n%s", res.Stdout)
	}

	res = berth(t, f.env(), "status", "--json")
	if res.Code != 0 {
		t.Fatalf("status --json: %+v", res)
	}
	checkNoRawControls(t, "berth status --json", res.Stdout)
	for _, want := range []string{`\u001b`, `\u009b`, `\u202e`, `\u007f`} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("status --json lacks %s", want)
		}
	}
	var st wire.ClusterStatus
	if err := json.Unmarshal([]byte(res.Stdout), &st); err != nil || st.ActiveApps[0].Name != hostileText || st.Workers[0].Limits != hostileText {
		t.Fatalf("status --json decoded to %+v, %v; want the name and limits as the master sent them", st, err)
	}
}

// A driver's final message, and a master's error that echoes its input,
// are printed escaped; berth's own lines stay lines.
func TestWaitEscapesMessagesAndErrors(t *testing.T) {
	f := newFakeMaster(t)
	res := berth(t, f.env(), "wait", "driver", "driver-hostile")
	if res.Code != 1 || res.Stdout != "FAILED: "+hostileEscaped+"\n" || res.Stderr != "berth: driver driver-hostile ended FAILED\n" {
		t.Fatalf("wait for a driver that ended with a hostile message: %+v", res)
	}
	res = berth(t, f.env(), "wait", "driver", "driver-gone")
	if res.Code != 1 || !strings.HasPrefix(res.Stderr, "berth: ") || !strings.HasSuffix(res.Stderr, "unknown driver "+hostileEscaped+"\n") {
		t.Fatalf("wait for a driver the master answers with a hostile error: %+v", res)
	}
	checkNoRawControls(t, "the error", res.Stderr)
}

// berth run prints the app's events and its end escaped; the name it makes
// from a program path holding controls is their escaped form, which the
// master accepts.
func TestRunEscapesWhatItShows(t *testing.T) {
	f := newFakeMaster(t)
	f.mu.Lock()
	f.endMessage = hostileText
	f.mu.Unlock()
	cmd, stdout, stderr := startRun(t, f, "/opt/\x1b[2Jloop")
	f.removed <- wire.AppFailed
	if code := testproc.ExitCode(t, cmd, 20*time.Second); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	checkNoRawControls(t, "berth run's events", stdout.String())
	checkNoRawControls(t, "berth run's errors", stderr.String())
	if !strings.Contains(stdout.String(), "state=FAILED cores=2 executors=-  "+hostileEscaped+"\n") {
		t.Errorf("the appRemoved event lacks the escaped message:\n%s", stdout.String())
	}
	if !strings.HasSuffix(stderr.String(), "berth: app app-1 ended FAILED: "+hostileEscaped+"\n") {
		t.Errorf("stderr %q: want the escaped message", stderr.String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if name := f.apps[0].Name; name != `\x1b[2Jloop` {
		t.Errorf("app named %q, want the escaped base name of its program", name)
	}
}

func TestFormatEventEscapes(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)
	got := formatEvent(wire.AppEvent{Type: wire.EventExecutorLost, Executor: &wire.ExecutorStatus{
		ID: 3, WorkerID: "w1\u202e", Cores: 4, State: wire.ExecutorLost}, Message: hostileText}, now)
	want := `2025-01-02 03:04:05.006  executorLost     exec=3 worker=w1\u202e cores=4 state=LOST  ` + hostileEscaped
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// A leader address from a master is no different.
	got = formatEvent(wire.AppEvent{Type: wire.EventMasterChanged, Leader: "http://m2\x1b[2J", Epoch: 4}, now)
	if want := `2025-01-02 03:04:05.006  masterChanged    leader=http://m2\x1b[2J epoch=4`; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
