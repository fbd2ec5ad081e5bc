package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The attacks of a tenant on its worker, tried through the real binaries
// on a TLS cluster with an operator secret and a worker started with
// --run-as dynamic (tests run as root): each must fail, and the files it
// aims at must stay as they were. docs/SECURITY.md lists them.
func TestTenantsCannotReachRootOrEachOther(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--run-as needs a root worker (CI runs as root)")
	}
	t.Parallel()
	cl := startCluster(t, clusterSpec{workers: []string{"w1"}, cores: 8, memory: "4g", tenantsReach: true,
		workerFlags: []string{"--run-as", "dynamic", "--log-max-size", "1m", "--log-max-files", "3"}})
	secretFile := filepath.Join(filepath.Dir(cl.worker("w1").WorkDir), "secret")
	workerKey := filepath.Join(cl.PKI.Dir, "w1-key.pem")
	passwd := testproc.NewTarget(t, filepath.Dir(cl.worker("w1").WorkDir), "passwd", "root:x:0:0:root:/root:/bin/sh\n")
	for _, f := range []string{secretFile, workerKey} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the attack's target %s: %v", f, err)
		}
	}
	app := func(name, script string) string {
		return cl.registerApp(t, wire.AppDescription{Name: name, Command: []string{"/bin/sh", "-c", script},
			MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 64})
	}
	logOf := func(t *testing.T, appID, stream, until string) string {
		t.Helper()
		var out string
		testproc.Eventually(t, 20*time.Second, appID+"'s "+stream+" to say "+until, func() error {
			rc, err := cl.c.ExecutorLogs(callCtx(t, 5*time.Second), appID, 0, stream, 0)
			if err != nil {
				return err
			}
			defer rc.Close()
			data, err := io.ReadAll(rc)
			out = string(data)
			if err == nil && !strings.Contains(out, until) {
				err = fmt.Errorf("not yet: %q", out)
			}
			return err
		})
		return out
	}

	t.Run("reading root's files through its logs", func(t *testing.T) {
		id := app("reader", "ln -sf "+secretFile+" ../stdout.1; echo plant-out:$?; ln -sf "+workerKey+" ../stderr.1; echo plant-err:$?; "+
			"ln "+secretFile+" ../stdout.2; echo hardlink:$?; echo home:$HOME; exec sleep 600")
		out := logOf(t, id, wire.LogStdout, "home:")
		errOut := logOf(t, id, wire.LogStderr, "")
		for _, want := range []string{"plant-out:1", "plant-err:1", "hardlink:1", "home:" + filepath.Join(cl.worker("w1").WorkDir, id, "0", "home")} {
			if !strings.Contains(out, want) {
				t.Errorf("the executor's output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out+errOut, secret) || strings.Contains(errOut, "PRIVATE KEY") {
			t.Errorf("the logs hold the worker's secret or key:\n%s\n%s", out, errOut)
		}
	})

	t.Run("writing root's files through a supervised driver's restart", func(t *testing.T) {
		id, err := cl.c.SubmitDriver(callCtx(t, 20*time.Second), wire.DriverDescription{Supervise: true, Cores: 1, MemoryMB: 64,
			Command: []string{"/bin/sh", "-c", "ln -sf " + passwd.Path + " ../stdout; ln -sf " + passwd.Path + " ../stderr; echo tried:$?; exit 1"}})
		if err != nil {
			t.Fatal(err)
		}
		testproc.Eventually(t, 30*time.Second, "the driver restarted twice", func() error {
			data, err := cl.c.DriverLogLines(callCtx(t, 5*time.Second), id, wire.LogStderr, 50)
			if err == nil && !strings.Contains(string(data), "(run 3)") {
				err = fmt.Errorf("not yet: %q", data)
			}
			return err
		})
		if _, err := cl.c.KillDriver(callCtx(t, 20*time.Second), id); err != nil {
			t.Error(err)
		}
		passwd.Untouched(t)
	})

	t.Run("writing root's files through the log roll", func(t *testing.T) {
		// A loop swaps the log for a link while 4.5 MiB of output rolls it
		// at every MiB.
		id := app("roller", `( while [ ! -e stop ]; do rm -f ../stdout; ln -s `+passwd.Path+` ../stdout; done ) 2>/dev/null & `+
			`yes "a line of a log that rolls every MiB" | head -c 4500000; touch stop; wait; echo; echo finished; exec sleep 600`)
		logOf(t, id, wire.LogStdout, "finished")
		rolled, _ := filepath.Glob(filepath.Join(cl.worker("w1").WorkDir, id, "0", "stdout.*"))
		if len(rolled) != 3 {
			t.Errorf("rolled files %v, want 3 (--log-max-files)", rolled)
		}
		passwd.Untouched(t)
	})

	t.Run("terminal escapes in a name", func(t *testing.T) {
		_, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{Name: "\x1b]0;pwned\x07\x1b[2J", Command: []string{"/bin/true"},
			MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 64})
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "name") {
			t.Errorf("an app named with escapes: %v, want a 400 naming the field", err)
		}
	})

	t.Run("escaping a kill into another's cgroup, signalling another", func(t *testing.T) {
		victim, err := cl.c.SubmitDriver(callCtx(t, 20*time.Second), wire.DriverDescription{Cores: 1, MemoryMB: 64,
			Command: []string{"/bin/sh", "-c", "echo $$; exec sleep 600"}})
		if err != nil {
			t.Fatal(err)
		}
		var victimPid int
		testproc.Eventually(t, 20*time.Second, "the victim's pid", func() error {
			data, err := cl.c.DriverLogLines(callCtx(t, 5*time.Second), victim, wire.LogStdout, 1)
			if err == nil {
				victimPid, err = strconv.Atoi(strings.TrimSpace(string(data)))
			}
			return err
		})
		procs := cgroupProcsOf(t, victimPid)
		id := app("escaper", "echo pid:$$; echo $$ > "+procs+"; echo moved:$?; kill -9 "+strconv.Itoa(victimPid)+"; echo signal:$?; exec sleep 600")
		out := logOf(t, id, wire.LogStdout, "signal:")
		var pid int
		fmt.Sscanf(out, "pid:%d", &pid)
		if pid == 0 || strings.Contains(out, "moved:0") || !strings.Contains(out, "signal:1") {
			t.Errorf("the escaper's output, want a refused move and a refused signal:\n%s", out)
		}
		if _, err := cl.c.KillApp(callCtx(t, 20*time.Second), id); err != nil {
			t.Fatal(err)
		}
		testproc.Eventually(t, 20*time.Second, "the escaper's process gone after its app's kill", func() error {
			if syscall.Kill(pid, 0) == nil {
				return fmt.Errorf("pid %d still alive", pid)
			}
			return nil
		})
		if err := syscall.Kill(victimPid, 0); err != nil {
			t.Errorf("the victim driver's process: %v, want alive", err)
		}
		if d, err := cl.c.Driver(callCtx(t, 5*time.Second), victim); err != nil || d.State != wire.DriverRunning {
			t.Errorf("the victim driver: %s %v, want RUNNING", d.State, err)
		}
	})
}

// cgroupProcsOf is the cgroup.procs file of pid's group in the memory
// controller (v1) or the unified hierarchy (v2): what an escaper would
// write its pid into. "/nonexistent" when pid has no berth cgroup (the
// worker could not make one here): the move then fails all the same.
func cgroupProcsOf(t *testing.T, pid int) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || !strings.Contains(parts[2], "/berth-") {
			continue
		}
		switch parts[1] {
		case "memory":
			return filepath.Join("/sys/fs/cgroup/memory", parts[2], "cgroup.procs")
		case "":
			return filepath.Join("/sys/fs/cgroup", parts[2], "cgroup.procs")
		}
	}
	return "/nonexistent/cgroup.procs"
}
