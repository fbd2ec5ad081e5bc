package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestProcessesSurviveKilledExecutor runs the built binary as a worker
// would: the driver with the cluster's environment, then its executors as
// separate processes from the command it registered. One executor is killed
// with SIGKILL and reported FAILED; the driver must still print the exact
// estimate and exit 0, and the other executor must exit 0 when told the job
// is done.
func TestProcessesSurviveKilledExecutor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := testproc.Build(t, "pi")
	f := newFakeMaster(t)
	f.setExecutors(0, 1)

	const tasks, samples = 30, 50000
	driver := exec.Command(bin, "--tasks", fmt.Sprint(tasks), "--samples", fmt.Sprint(samples), "--seed", "3")
	driver.Env = append(os.Environ(), wire.EnvMaster+"="+f.srv.URL, wire.EnvToken+"=cluster-secret", wire.EnvWorkerHost+"=127.0.0.1")
	var stdout, stderr testproc.Buffer
	driver.Stdout, driver.Stderr = &stdout, &stderr
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = driver.Process.Kill() })
	desc := f.waitRegistered(t)
	if desc.Command[0] != bin {
		t.Fatalf("executors would run %q, want this binary %q", desc.Command[0], bin)
	}

	var execStderr [2]testproc.Buffer
	execs := make([]*exec.Cmd, 2)
	for id := range execs {
		cmd := exec.Command(desc.Command[0], desc.Command[1:]...)
		// What a worker gives an executor: the app's env, its own, no secret.
		cmd.Env = append(os.Environ(), wire.EnvExecutorID+"="+fmt.Sprint(id), wire.EnvCores+"=2", wire.EnvAppID+"="+appID)
		for k, v := range desc.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = &execStderr[id]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		execs[id] = cmd
	}

	// Kill executor 0 once it runs, and report it as its worker would.
	testproc.Eventually(t, 20*time.Second, "executor 0 to start", func() bool { return strings.Contains(execStderr[0].String(), "executor started") })
	_ = execs[0].Process.Kill()
	_ = execs[0].Wait()
	f.stream <- streamItem{ev: wire.AppEvent{Type: wire.EventExecutorUpdated, AppID: appID,
		Executor: &wire.ExecutorStatus{ID: 0, State: wire.ExecutorFailed, Message: "killed"}}}

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("driver stderr:\n%s\nexecutor 0:\n%s\nexecutor 1:\n%s", stderr.String(), execStderr[0].String(), execStderr[1].String())
		}
	})
	if code := testproc.ExitCode(t, driver, 30*time.Second); code != 0 {
		t.Fatalf("driver exit %d; stderr:\n%s", code, stderr.String())
	}
	inside, n := directEstimate(makeTasks(tasks, samples, 3))
	want := fmt.Sprintf("Pi is roughly %.6f (%d samples in %d tasks)\n", estimate(inside, n), n, tasks)
	if stdout.String() != want {
		t.Fatalf("driver printed %q, want %q", stdout.String(), want)
	}
	if code := testproc.ExitCode(t, execs[1], 30*time.Second); code != 0 {
		t.Fatalf("executor 1 exit %d; stderr:\n%s", code, execStderr[1].String())
	}
	if !f.wasUnregistered() {
		t.Fatal("the driver did not unregister")
	}
}
