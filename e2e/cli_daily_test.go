package e2e

// The CLI's daily tasks (issue 24), with the real binaries: berth run
// --detach, berth app limit (and what status says of the executors beyond
// a lowered limit), berth app kill-executors, berth logs --follow, berth
// wait app, and berth run saying why its app waits.

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// bgBerth is a berth command running in the background, its stdout read
// line by line.
type bgBerth struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	stderr strings.Builder
	done   chan struct{}
	err    error
}

func startBerth(t *testing.T, args ...string) *bgBerth {
	t.Helper()
	b := &bgBerth{cmd: exec.Command(bin.Berth, args...), done: make(chan struct{})}
	b.cmd.Env = berthEnv()
	b.cmd.Stderr = &syncWriter{b: b}
	out, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.cmd.Process.Kill(); <-b.done })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			b.mu.Lock()
			b.lines = append(b.lines, sc.Text())
			b.mu.Unlock()
		}
		io.Copy(io.Discard, out)
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	return b
}

type syncWriter struct{ b *bgBerth }

func (w *syncWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return w.b.stderr.Write(p)
}

func (b *bgBerth) output() ([]string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...), b.stderr.String()
}

// exited waits up to timeout for the command to end and returns its exit
// code (-1: still running).
func (b *bgBerth) exited(timeout time.Duration) int {
	select {
	case <-b.done:
		return b.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		return -1
	}
}

// numbered checks that lines are "line 0", "line 1", ...: nothing printed
// twice, nothing skipped; it returns how many there are.
func numbered(lines []string) (int, error) {
	for i, l := range lines {
		if l != "line "+strconv.Itoa(i) {
			return i, fmt.Errorf("line %d is %q, want %q", i, l, "line "+strconv.Itoa(i))
		}
	}
	return len(lines), nil
}

func TestCLIDailyTasks(t *testing.T) {
	t.Parallel()
	cl := daemonCluster(t, nil, 2, "w1")
	loop := "i=0; while :; do echo line $i; i=$((i+1)); sleep 0.1; done; : " + cl.marker + " " + wire.PlaceholderAppID + "/" + wire.PlaceholderExecutorID

	// Detached: registered, its id printed, berth gone; the app outlives
	// --app-timeout (2 s here) without a client.
	r := cl.cli("run", "--detach", "--name", "daily", "--cores-per-executor", "1", "--executor-memory", "64m", "--max-cores", "2", "--", "/bin/sh", "-c", loop)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(id, "app-") || !strings.Contains(r.stderr, "berth kill app "+id) || r.took > 10*time.Second {
		t.Fatalf("berth run --detach: %s", r)
	}
	cl.runningApp(id, 2, 20*time.Second)
	testproc.Stable(t, 2*daemonWorkerTimeout+time.Second, "the detached app to run on without a client past --app-timeout", func() error {
		st, err := cl.status()
		if err != nil {
			return nil // a poll that failed says nothing of the app
		}
		if a, ok := appStatus(st, id); !ok || a.State != wire.AppRunning || !a.Detached {
			return fmt.Errorf("app %s: %+v", id, a)
		}
		return nil
	})

	// A lower limit kills nothing, and status says what becomes of the
	// executor beyond it.
	r = cl.cli("app", "limit", id, "1")
	over := "over its executor limit (1): 2 executors run; the 1 beyond it run on until they end or are killed"
	if r.code != 0 || !strings.Contains(r.stdout, "executor limit of app "+id+" set to 1") || !strings.Contains(r.stdout, over) {
		t.Errorf("berth app limit: %s", r)
	}
	r = cl.cli("status")
	if line := lineOf(r.stdout, id); !strings.Contains(line, over) || strings.Contains(line, "executor limit reached") {
		t.Errorf("the app in berth status after its limit was lowered: %q\n%s", line, r)
	}
	if r := cl.cli("app", "limit", id, "-1"); r.code != 1 || !strings.Contains(r.stderr, "limit") {
		t.Errorf("a negative limit: %s", r)
	}
	r = cl.cli("app", "kill-executors", id, "1")
	if r.code != 0 || !strings.Contains(r.stdout, "killing executors 1 of app "+id) {
		t.Errorf("berth app kill-executors: %s", r)
	}
	cl.appWhen(id, 20*time.Second, "executor 1 KILLED, executor 0 alone RUNNING", func(a wire.AppStatus) error {
		running, killed := 0, false
		for _, e := range a.Executors {
			running += map[bool]int{true: 1}[e.State == wire.ExecutorRunning]
			killed = killed || (e.ID == 1 && e.State == wire.ExecutorKilled)
		}
		if running != 1 || !killed || strings.Contains(a.Waiting, "over its executor limit") {
			return fmt.Errorf("executors %s, waiting %q", describeExecs(a), a.Waiting)
		}
		return nil
	})
	// berth app ID still prints its status as JSON.
	if r := cl.cli("app", id); r.code != 0 || !strings.Contains(r.stdout, `"detached": true`) {
		t.Errorf("berth app %s: %s", id, r)
	}

	// Following executor 0's output: every line once, in order, as it comes.
	follow := startBerth(t, append(operatorArgs(cl.URLs()...), "logs", "executor", id, "0", "--follow")...)
	testproc.Eventually(t, 20*time.Second, "berth logs --follow to print 30 lines more than the log first held", func() error {
		lines, stderr := follow.output()
		n, err := numbered(lines)
		if err != nil {
			return fmt.Errorf("%v (stderr %s)", err, stderr)
		}
		if n < 60 {
			return fmt.Errorf("%d lines so far", n)
		}
		return nil
	})
	// berth wait app gives up at its --timeout while the app runs.
	if r := cl.cli("wait", "app", id, "--timeout", "1s"); r.code != 1 || r.took < time.Second || !strings.Contains(r.stderr, "RUNNING") {
		t.Errorf("berth wait app --timeout 1s on a running app: %s", r)
	}
	waiter := startBerth(t, append(operatorArgs(cl.URLs()...), "wait", "app", id)...)
	if r := cl.cli("kill", "app", id); r.code != 0 || !strings.Contains(r.stdout, "killed app "+id) {
		t.Fatalf("berth kill app: %s", r)
	}
	// The executor ended: following ends, the log read to its end.
	if code := follow.exited(15 * time.Second); code != 0 {
		lines, stderr := follow.output()
		t.Fatalf("berth logs --follow once the executor was killed: exit %d after %d lines, stderr %s", code, len(lines), stderr)
	}
	lines, _ := follow.output()
	if n, err := numbered(lines); err != nil {
		t.Errorf("berth logs --follow printed %d lines in order, then: %v", n, err)
	}
	if code := waiter.exited(15 * time.Second); code != 1 {
		t.Errorf("berth wait app on a killed app: exit %d", code)
	}
	if out, stderr := waiter.output(); len(out) == 0 || !strings.HasPrefix(out[0], "KILLED") || !strings.Contains(stderr, "ended KILLED") {
		t.Errorf("berth wait app on a killed app: stdout %q stderr %q", out, stderr)
	}

	// berth run says why its app waits, as status does: no worker has 3
	// cores. Ctrl-C unregisters it (FINISHED), which berth wait app sees.
	run := startBerth(t, append(operatorArgs(cl.URLs()...), "run", "--cores-per-executor", "3", "--executor-memory", "64m", "--", "/bin/true")...)
	testproc.Eventually(t, 20*time.Second, "berth run to say why its app waits", func() error {
		lines, stderr := run.output()
		for _, l := range lines {
			if strings.Contains(l, "  waiting  ") && strings.Contains(l, "cannot start: no worker has 3 cores") {
				return nil
			}
		}
		return fmt.Errorf("stdout %q stderr %q", lines, stderr)
	})
	_, stderr := run.output()
	m := regexp.MustCompile(`registered app (app-\S+);`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("berth run's stderr names no app: %q", stderr)
	}
	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := run.exited(15 * time.Second); code != 0 {
		t.Errorf("berth run after Ctrl-C: exit %d", code)
	}
	if r := cl.cli("wait", "app", m[1]); r.code != 0 || !strings.HasPrefix(r.stdout, "FINISHED") {
		t.Errorf("berth wait app on an unregistered app: %s", r)
	}
}
