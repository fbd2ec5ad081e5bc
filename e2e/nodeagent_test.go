package e2e

// The worker as a node agent, through the real binaries (issue 11): what a
// user sees of the limits it enforces with cgroups, of the kill of a whole
// cgroup, and of its rolled logs. worker/limits_test.go and
// worker/logroll_test.go check the same against a fake master.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// requireLimits skips the test where the workers could not make cgroups:
// they then say so in the cluster's status ("not enforced: why"), which is
// what worker/limits_test.go's requireCgroups decides by. A worker that
// says nothing at all fails the test: it must tell either way.
func requireLimits(t *testing.T, cl *cluster, ids ...string) {
	t.Helper()
	st := cl.mustStatus()
	for _, id := range ids {
		w, ok := workerIn(st, id)
		switch {
		case !ok || w.Limits == "":
			t.Fatalf("worker %s does not say how it enforces limits (listed %v): %+v", id, ok, w)
		case strings.HasPrefix(w.Limits, "not enforced"):
			t.Skipf("worker %s: limits %s", id, w.Limits)
		}
	}
}

// An executor that allocates past its --executor-memory is killed by the
// kernel, and the user is told why in Spark's and YARN's words, not with a
// bare 137: `berth run` prints it with the executor's end and exits 1 (the
// app FAILED), and the API's executor says the same.
func TestOverMemoryExecutorIsKilledAndSaysSo(t *testing.T) {
	t.Parallel()
	cl := daemonCluster(t, []string{"--max-executor-retries", "1"}, 2, "oom1")
	requireLimits(t, cl, "oom1")
	// dd's one 256 MB buffer, filled from /dev/zero, against 64 MB.
	run := start(t, "berth-run", bin.Berth, []string{"--master", strings.Join(cl.URLs(), ","), "run",
		"--name", "oom", "--max-cores", "1", "--executor-memory", "64m", "--",
		"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"})
	select {
	case <-run.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("berth run did not end within 60 s of the app's only executor passing its memory:\n%s", run.LogTail(4000))
	}
	out := run.LogTail(1 << 16)
	var exit *exec.ExitError
	if !errors.As(run.Err(), &exit) || exit.ExitCode() != 1 {
		t.Errorf("berth run ended %v, want exit status 1 (the app FAILED)", run.Err())
	}
	const said = "killed: exceeded its memory limit of 64 MB"
	if !regexp.MustCompile(`state=FAILED.*` + regexp.QuoteMeta(said)).MatchString(out) {
		t.Errorf("berth run's output does not tell the executor FAILED with %q:\n%s", said, out)
	}
	m := regexp.MustCompile(`registered app (\S+);`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("berth run did not print the app's id:\n%s", out)
	}
	a, err := cl.c.App(callCtx(t, 20*time.Second), m[1])
	if err != nil {
		t.Fatal(err)
	}
	if a.State != wire.AppFailed || len(a.Executors) != 1 {
		t.Fatalf("app %s with executors %s, want FAILED after its one executor", a.State, describeExecs(a))
	}
	if e := a.Executors[0]; e.State != wire.ExecutorFailed || !strings.Contains(e.Message, said) {
		t.Errorf("the API's executor: %s %q, want FAILED with %q", e.State, e.Message, said)
	}
}

// What an executor or a driver starts as a daemon (fork, setsid, fork
// again, the middle process gone: a new session, an orphan) escapes its
// process group, but not its cgroup: killing the app through `berth kill
// app` ends its executor's escapee and nothing else, killing the driver
// through `berth kill driver` ends the driver's.
func TestSetsidEscapeesDieWithTheirAppAndDriver(t *testing.T) {
	t.Parallel()
	cl := daemonCluster(t, nil, 2, "esc1")
	requireLimits(t, cl, "esc1")
	work := cl.worker("esc1").WorkDir

	appEsc := newMarker(t)
	desc := cl.longApp("escapes", 1)
	desc.Command = []string{"/bin/sh", "-c", escapeScript(appEsc) + cl.execCommand()[2]}
	appID := cl.registerApp(t, desc)
	st := cl.runningApp(appID, 1, 20*time.Second)
	e := liveExecutors(mustApp(t, st, appID))[0]
	appEscapee := waitEscapee(t, filepath.Join(work, appID, strconv.Itoa(e.ID)), appEsc, cl.execPids()[execKey(appID, e.ID)])

	drvMarker, drvEsc := newMarker(t), newMarker(t)
	out, err := cl.berthCLI("submit", "--memory", "64m", "--", "/bin/sh", "-c", escapeScript(drvEsc)+"sleep 3600; : "+drvMarker)
	lines := strings.Fields(out)
	if err != nil || len(lines) == 0 {
		t.Fatalf("berth submit: %v\n%s", err, out)
	}
	drvID := lines[len(lines)-1]
	cl.driverWhen(drvID, 20*time.Second, "the driver RUNNING", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRunning {
			return errors.New("want RUNNING")
		}
		return nil
	})
	var drvPid int
	testproc.Eventually(t, 10*time.Second, "the driver's process", func() error {
		pids := pidsOf(drvMarker)
		if len(pids) != 1 {
			return fmt.Errorf("processes %v carry the driver's marker, want one", pids)
		}
		drvPid = pids[0]
		return nil
	})
	drvEscapee := waitEscapee(t, filepath.Join(work, "drivers", drvID), drvEsc, drvPid)

	if out, err := cl.berthCLI("kill", "app", appID); err != nil || !strings.Contains(out, "killed app "+appID) {
		t.Fatalf("berth kill app: %v\n%s", err, out)
	}
	waitGone(t, "the app's escapee", appEsc, appEscapee)
	if pids := pidsOf(drvEsc); !samePids(pids, []int{drvEscapee}) {
		t.Errorf("the driver's escapee %d: processes %v carry its marker after the kill of the app, want it alone", drvEscapee, pids)
	}
	cl.appWhen(appID, 10*time.Second, "the app KILLED", func(a wire.AppStatus) error {
		if a.State != wire.AppKilled {
			return errors.New("want KILLED")
		}
		return nil
	})

	if out, err := cl.berthCLI("kill", "driver", drvID); err != nil || !strings.Contains(out, "driver "+drvID) {
		t.Fatalf("berth kill driver: %v\n%s", err, out)
	}
	waitGone(t, "the driver's escapee", drvEsc, drvEscapee)
	cl.driverWhen(drvID, 10*time.Second, "the driver KILLED", func(d wire.DriverStatus) error {
		if d.State != wire.DriverKilled {
			return errors.New("want KILLED")
		}
		return nil
	})
}

// escapeScript is shell that daemonizes `sleep 600 marker` and writes its
// pid into escapee.pid in the working directory (the process's own
// directory in the worker's --work-dir); what follows it runs at once. The
// marker is written cut by a pair of quotes, so that only the sleep
// carries it whole, not the shells whose scripts hold it.
func escapeScript(marker string) string {
	return "setsid sh -c 'sleep 600 " + marker[:2] + `""` + marker[2:] + " & echo $! > escapee.pid' & "
}

// waitEscapee waits for the pid in dir/home/escapee.pid, checks that it is the
// process carrying marker and that it did leave the session (so the process
// group) of the process that started it, parentPid, and returns it.
func waitEscapee(t *testing.T, dir, marker string, parentPid int) int {
	t.Helper()
	var pid int
	testproc.Eventually(t, 10*time.Second, "the escapee's pid in "+dir, func() error {
		data, err := os.ReadFile(filepath.Join(dir, "home", "escapee.pid")) // the process's working directory
		if err != nil {
			return err
		}
		if pid, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			return err // not written whole yet
		}
		if pids := pidsOf(marker); !samePids(pids, []int{pid}) {
			return fmt.Errorf("escapee.pid says %d, processes %v carry its marker", pid, pids)
		}
		return nil
	})
	// Without this the test would pass on the process group kill alone.
	if parentPid == 0 || sessionOf(t, pid) == sessionOf(t, parentPid) {
		t.Fatalf("escapee %d is in the session of the process that started it (%d): it did not escape", pid, parentPid)
	}
	return pid
}

// sessionOf is a live process's session id, from /proc/PID/stat (its
// fields after the command name, which may hold spaces, in parentheses).
func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	sid, err := strconv.Atoi(fields[3]) // state, ppid, pgrp, session
	if err != nil {
		t.Fatalf("/proc/%d/stat: %q: %v", pid, stat, err)
	}
	return sid
}

// waitGone waits until no live process carries marker (pid carried it).
func waitGone(t *testing.T, what, marker string, pid int) {
	t.Helper()
	testproc.Eventually(t, 15*time.Second, what+" ("+strconv.Itoa(pid)+") to be gone", func() error {
		if pids := pidsOf(marker); len(pids) > 0 {
			return fmt.Errorf("still running: %v", pids)
		}
		return nil
	})
}

// An executor writes 5 MB to stdout on a worker that rolls at 1 MB and
// keeps 2 rolled files. As the docs say, stdout rolls into stdout.1 and
// stdout.2, the oldest beyond them go, and the log API and `berth logs`
// read across the files: what they give back is the output's end, whole
// (no gap, no repeat, in order), between the two full rolled files and the
// three files' worth.
func TestRolledExecutorLogReadsBackWhole(t *testing.T) {
	t.Parallel()
	const maxSize, keep = 1 << 20, 2
	cl := startCluster(t, clusterSpec{workers: []string{"log1"}, cores: 2, memory: "1g",
		workerFlags: []string{"--log-max-size", "1m", "--log-max-files", strconv.Itoa(keep)}})
	const n = 200000
	line := func(i int) string { return fmt.Sprintf("line %06d of the output\n", i) }
	desc := cl.longApp("rolled", 1)
	desc.Command = []string{"/bin/sh", "-c", fmt.Sprintf("seq -f 'line %%06g of the output' 0 %d; %s", n-1, cl.execCommand()[2])}
	appID := cl.registerApp(t, desc)
	st := cl.runningApp(appID, 1, 20*time.Second)
	execID := liveExecutors(mustApp(t, st, appID))[0].ID

	testproc.Eventually(t, 30*time.Second, "the output's last line through the log API", func() error {
		b, err := cl.c.ExecutorLogLines(callCtx(t, 10*time.Second), appID, execID, "stdout", 1)
		if err != nil || string(b) != line(n-1) {
			return fmt.Errorf("last line %q, %v", b, err)
		}
		return nil
	})
	rc, err := cl.c.ExecutorLogs(callCtx(t, 30*time.Second), appID, execID, "stdout", 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	var all strings.Builder
	for i := range n {
		all.WriteString(line(i))
	}
	if !strings.HasSuffix(all.String(), got) {
		t.Errorf("the log read back (%d bytes, from %q) is not the end of the output: a gap, a repeat or a byte out of order",
			len(got), got[:min(len(got), 60)])
	}
	// A file rolls only when the next line would not fit: a rolled file
	// is full to within a line.
	if least := keep * (maxSize - len(line(0))); len(got) < least || len(got) > (keep+1)*maxSize {
		t.Errorf("read back %d bytes, want between %d (the rolled files) and %d (every file full)", len(got), least, (keep+1)*maxSize)
	}
	files, _ := filepath.Glob(filepath.Join(cl.worker("log1").WorkDir, appID, strconv.Itoa(execID), "stdout*"))
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	if strings.Join(files, " ") != "stdout stdout.1 stdout.2" {
		t.Errorf("stdout's files %v, want stdout, stdout.1 and stdout.2", files)
	}

	if out, err := cl.berthCLI("logs", "executor", appID, strconv.Itoa(execID)); err != nil || out != got {
		t.Errorf("berth logs: %v; %d bytes, the API's %d", err, len(out), len(got))
	}
	want := line(n-3) + line(n-2) + line(n-1)
	if out, err := cl.berthCLI("logs", "executor", appID, strconv.Itoa(execID), "--tail", "3"); err != nil || out != want {
		t.Errorf("berth logs --tail 3: %v\n%q, want %q", err, out, want)
	}
}
