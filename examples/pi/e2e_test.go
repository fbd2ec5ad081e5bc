package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// job is a driver running in-process against a fake master.
type job struct {
	f    *fakeMaster
	cfg  driverConfig
	out  *testproc.Buffer
	done chan error
	desc wire.AppDescription
}

func startJob(t *testing.T, cfg driverConfig, f *fakeMaster) *job {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	j := &job{f: f, cfg: cfg, out: &testproc.Buffer{}, done: make(chan error, 1)}
	go func() { j.done <- runDriver(ctx, cfg, j.out, testLogger()) }()
	j.desc = f.waitRegistered(t)
	return j
}

func (j *job) executor(id, cores int) executorConfig {
	return executorConfig{driver: j.desc.Command[3], token: j.desc.Env[tokenEnv], id: id, cores: cores, giveUp: 10 * time.Second}
}

// runExecutors starts executors in goroutines; the channel gets their result.
func (j *job) runExecutors(t *testing.T, cfgs ...executorConfig) chan error {
	errs := make(chan error, len(cfgs))
	for _, c := range cfgs {
		go func() { errs <- runExecutor(context.Background(), c, testLogger()) }()
	}
	return errs
}

func (j *job) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-j.done:
		return err
	case <-time.After(40 * time.Second):
		t.Fatalf("the driver did not finish; stdout %q", j.out.String())
		return nil
	}
}

// wantDirectEstimate checks the driver printed exactly the estimate computed
// straight from the task seeds.
func (j *job) wantDirectEstimate(t *testing.T) {
	t.Helper()
	inside, samples := directEstimate(makeTasks(j.cfg.tasks, j.cfg.samples, j.cfg.seed))
	want := fmt.Sprintf("Pi is roughly %.6f (%d samples in %d tasks)\n", estimate(inside, samples), samples, j.cfg.tasks)
	if got := j.out.String(); got != want {
		t.Fatalf("driver printed %q, want %q", got, want)
	}
}

// dyingExecutor leases one task per loop and hangs on it until killed (its
// context is cancelled): a process that dies holding leases.
func (j *job) dyingExecutor(t *testing.T, id, loops int) (kill func()) {
	ctx, cancel := context.WithCancel(context.Background())
	leased := make(chan Task, loops)
	c := j.executor(id, loops)
	c.onLeased = func(task Task) {
		leased <- task
		<-ctx.Done()
	}
	go runExecutor(ctx, c, testLogger())
	for range loops {
		testproc.Receive(t, leased, 20*time.Second, "the dying executor to get a task")
	}
	return cancel
}

func TestDriverRegistersItselfAsExecutor(t *testing.T) {
	f := newFakeMaster(t)
	f.setExecutors(1)
	cfg := testConfig(f, 4)
	cfg.maxCores, cfg.coresPerExecutor = 6, 2
	j := startJob(t, cfg, f)
	d := j.desc
	if len(d.Command) != 4 || d.Command[0] != "/opt/pi" || d.Command[1] != "executor" || d.Command[2] != "--driver" ||
		!strings.HasPrefix(d.Command[3], "http://127.0.0.1:") {
		t.Fatalf("executor command %q", d.Command)
	}
	if len(d.Env[tokenEnv]) < 32 || d.Env[wire.EnvSecret] != "" || d.MaxCores != 6 || d.CoresPerExecutor != 2 || d.MemoryPerExecutorMB != 256 {
		t.Fatalf("app description %+v", d)
	}
	// Without the token the task server refuses.
	bad := j.executor(1, 1)
	bad.token = "guess"
	if _, err := call(context.Background(), bad, "/lease", leaseRequest{Executor: 1}, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("lease with a wrong token: %v", err)
	}
	j.runExecutors(t, j.executor(1, 2))
	if err := j.wait(t); err != nil {
		t.Fatal(err)
	}
	j.wantDirectEstimate(t)
	if !f.wasUnregistered() {
		t.Fatal("the driver did not unregister its app")
	}
}

func TestExecutorLostMidJob(t *testing.T) {
	f := newFakeMaster(t)
	f.setExecutors(1, 2, 9)
	j := startJob(t, testConfig(f, 40), f)
	kill := j.dyingExecutor(t, 9, 3) // holds 3 tasks
	errs := j.runExecutors(t, j.executor(1, 2), j.executor(2, 2))

	// Executor 9's worker dies. With an hour of task timeout, only the
	// re-queue on this event lets the job finish.
	kill()
	f.stream <- streamItem{ev: wire.AppEvent{Type: wire.EventExecutorLost, AppID: appID,
		Executor: &wire.ExecutorStatus{ID: 9, State: wire.ExecutorLost}, Message: "worker lost"}}

	if err := j.wait(t); err != nil {
		t.Fatal(err)
	}
	j.wantDirectEstimate(t)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("executor: %v", err)
		}
	}
}

func TestExecutorAbsentFromSnapshotAfterFailover(t *testing.T) {
	f := newFakeMaster(t)
	f.setExecutors(1, 2, 9)
	j := startJob(t, testConfig(f, 30), f)
	kill := j.dyingExecutor(t, 9, 2)
	j.runExecutors(t, j.executor(1, 2), j.executor(2, 1))

	// The master fails over; the new leader's snapshot no longer lists 9.
	kill()
	f.setExecutors(1, 2)
	f.stream <- streamItem{drop: true}

	if err := j.wait(t); err != nil {
		t.Fatal(err)
	}
	j.wantDirectEstimate(t)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns < 2 {
		t.Fatalf("%d event streams, want a reconnection", f.conns)
	}
}

func TestTaskTimeoutRequeues(t *testing.T) {
	f := newFakeMaster(t)
	f.setExecutors(1, 9)
	cfg := testConfig(f, 12)
	cfg.taskTimeout = 300 * time.Millisecond // no event will come
	j := startJob(t, cfg, f)
	kill := j.dyingExecutor(t, 9, 2)
	defer kill()
	j.runExecutors(t, j.executor(1, 2))
	if err := j.wait(t); err != nil {
		t.Fatal(err)
	}
	j.wantDirectEstimate(t)
}

func TestAppKilledByMaster(t *testing.T) {
	f := newFakeMaster(t)
	j := startJob(t, testConfig(f, 10), f) // no executors: the job cannot end
	f.stream <- streamItem{ev: wire.AppEvent{Type: wire.EventAppRemoved, AppID: appID,
		App: &wire.AppStatus{ID: appID, State: wire.AppKilled, Message: "killed by berth kill"}}}
	err := j.wait(t)
	if err == nil || !strings.Contains(err.Error(), "KILLED") || !strings.Contains(err.Error(), "killed by berth kill") {
		t.Fatalf("driver after its app was killed: %v", err)
	}
	if f.wasUnregistered() || j.out.String() != "" {
		t.Fatalf("a killed app was unregistered or printed a result: %q", j.out.String())
	}
}

func TestExecutorGivesUpOnDeadDriver(t *testing.T) {
	c := executorConfig{driver: "http://127.0.0.1:1", token: "t", id: 1, cores: 2, giveUp: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- runExecutor(context.Background(), c, testLogger()) }()
	if err := testproc.Receive(t, done, 20*time.Second, "the executor to give up on a dead driver"); err != nil {
		t.Fatalf("executor with a dead driver: %v, want a clean exit", err)
	}
}
