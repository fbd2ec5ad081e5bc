package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// startRun starts `berth run` of argv (default: /opt/loop {{EXECUTOR_ID}})
// and waits until it printed the executor the fake master streams.
func startRun(t *testing.T, f *fakeMaster, argv ...string) (*exec.Cmd, *testproc.Buffer, *testproc.Buffer) {
	t.Helper()
	if len(argv) == 0 {
		argv = []string{"/opt/loop", "{{EXECUTOR_ID}}"}
	}
	cmd := exec.Command(berthBin, append([]string{"run", "--executor-limit", "2", "--env", "K=V", "--"}, argv...)...)
	cmd.Env = append(cleanEnv(), f.env()...)
	var stdout, stderr testproc.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("berth run's stdout %q, stderr %q", stdout.String(), stderr.String())
		}
	})
	testproc.Eventually(t, 20*time.Second, "berth run to print the executor", func() bool {
		return strings.Contains(stdout.String(), "executorAdded")
	})
	return cmd, &stdout, &stderr
}

func TestRunUnregistersOnSignal(t *testing.T) {
	f := newFakeMaster(t)
	cmd, stdout, stderr := startRun(t, f)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := testproc.ExitCode(t, cmd, 20*time.Second); code != 0 {
		t.Fatalf("exit %d after Ctrl-C; stderr %q", code, stderr.String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unregisters != 1 {
		t.Fatalf("%d unregisters, want 1", f.unregisters)
	}
	d := f.apps[0]
	if d.Name != "loop" || d.InitialExecutorLimit == nil || *d.InitialExecutorLimit != 2 || d.Env["K"] != "V" ||
		d.MemoryPerExecutorMB != 1024 || strings.Join(d.Command, " ") != "/opt/loop {{EXECUTOR_ID}}" {
		t.Fatalf("app description %+v", d)
	}
	out := stdout.String()
	for _, want := range []string{"snapshot", "app=app-1", "exec=0 worker=worker-a cores=2 state=LAUNCHING", "appRemoved", "FINISHED"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestRunFailsWhenAppKilled(t *testing.T) {
	f := newFakeMaster(t)
	cmd, _, stderr := startRun(t, f)
	f.removed <- wire.AppKilled
	if code := testproc.ExitCode(t, cmd, 20*time.Second); code != 1 || !strings.Contains(stderr.String(), "KILLED") {
		t.Fatalf("exit %d, stderr %q; want 1 and KILLED", code, stderr.String())
	}
}

func TestFormatEvent(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)
	code := 137
	got := formatEvent(wire.AppEvent{Type: wire.EventExecutorLost, Executor: &wire.ExecutorStatus{
		ID: 3, WorkerID: "w1", Cores: 4, State: wire.ExecutorLost, ExitCode: &code}, Message: "worker lost"}, now)
	want := "2025-01-02 03:04:05.006  executorLost     exec=3 worker=w1 cores=4 state=LOST exit=137  worker lost"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// The master's time, when the event carries it, shown in the local zone.
	madeAt := time.Date(2025, 1, 2, 4, 4, 4, 7e6, time.FixedZone("CET", 3600))
	got = formatEvent(wire.AppEvent{Type: wire.EventMasterChanged, Time: madeAt, Leader: "http://m2:7077", Epoch: 4}, now)
	want = "2025-01-02 03:04:04.007  masterChanged    leader=http://m2:7077 epoch=4"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
