package worker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// requireCgroups skips where the worker could not make cgroups (it then
// says so: see TestLimitsAreReported).
func requireCgroups(t *testing.T, tw *testWorker) {
	t.Helper()
	if tw.cg == nil {
		t.Skipf("no cgroups here: %s", tw.limits)
	}
}

// The worker tells the master how it enforces limits; with cgroups each
// executor's group has its memory, CPU weight and pids limits.
func TestLimitsAreReportedAndSet(t *testing.T) {
	fm, tw := startParallel(t, nil)
	var limits string
	fm.with(func() { limits = fm.registrations[0].Limits })
	if limits == "" || (tw.cg == nil) != strings.HasPrefix(limits, "not enforced: ") {
		t.Fatalf("registered limits %q (cgroups %v)", limits, tw.cg != nil)
	}
	requireCgroups(t, tw)
	tw.runSleeper("app-lim", 2)
	dir := filepath.Join(tw.cg.base["memory"], "executor-app-lim-2")
	if tw.cg.v2 {
		dir = filepath.Join(tw.cg.base[""], "executor-app-lim-2")
	}
	read := func(v1, v2 string) string {
		f := filepath.Join(filepath.Dir(filepath.Dir(dir)), v1)
		if tw.cg.v2 {
			f = filepath.Join(dir, v2)
		} else {
			ctl, name, _ := strings.Cut(v1, "/")
			f = filepath.Join(tw.cg.base[ctl], "executor-app-lim-2", name)
		}
		data, _ := os.ReadFile(f)
		return strings.TrimSpace(string(data))
	}
	if got := read("memory/memory.limit_in_bytes", "memory.max"); got != strconv.Itoa(256<<20) {
		t.Errorf("memory limit %q, want 256 MiB", got)
	}
	if got := read("pids/pids.max", "pids.max"); got != "4096" {
		t.Errorf("pids.max %q", got)
	}
	if got := read("cpu/cpu.shares", "cpu.weight"); got != "1024" && got != "100" {
		t.Errorf("cpu weight %q for 1 core", got)
	}
}

// A process that allocates past its memory is killed by the kernel and
// reported as such, not as a bare 137.
func TestOverMemoryIsKilledAndSaysSo(t *testing.T) {
	fm, tw := startParallel(t, nil)
	requireCgroups(t, tw)
	// 512 MB of one string (perl is Essential in Debian), against 256 MB.
	tw.launchExecutor("app-oom", 0, []string{"perl", "-e", `$x = "a" x 536870912; print length($x), "\n"`})
	reps := fm.waitFinal(t, "app-oom", 0)
	final := reps[len(reps)-1]
	if final.State != wire.ExecutorFailed || !strings.Contains(final.Message, "exceeded its memory limit of 256 MB") {
		t.Errorf("final state %s %q, want FAILED, killed for its memory", final.State, final.Message)
	}
}

// What an executor started in a session of its own (setsid, double fork)
// dies with the executor: its cgroup is killed whole.
func TestSetsidEscapeeDiesWithItsExecutor(t *testing.T) {
	_, tw := startParallel(t, nil)
	requireCgroups(t, tw)
	tw.launchExecutor("app-esc", 0, []string{"/bin/sh", "-c", "setsid sh -c 'sleep 300 & echo $! > escapee.pid; wait' & echo pid $$; sleep 300"})
	pidFile := filepath.Join(tw.execDir("app-esc", 0), homeDir, "escapee.pid")
	var escapee int
	testproc.Eventually(t, 10*time.Second, "the escapee's pid", func() bool {
		data, _ := os.ReadFile(pidFile)
		n, err := strconv.Atoi(strings.TrimSpace(string(data)))
		escapee = n
		return err == nil && n > 0
	})
	tw.mustCall(200, "POST", "/v1/executors/kill", wire.KillExecutor{Epoch: 5, AppID: "app-esc", ExecutorID: 0})
	testproc.Eventually(t, 10*time.Second, "the setsid escapee to die with its executor", func() bool { return !testproc.Alive(escapee) })
}

// A worker killed before it could remove its processes' groups leaves them
// empty; the next run of the worker removes them.
func TestLeftoverCgroupsAreSwept(t *testing.T) {
	cg, err := setupCgroups("sweep-test-"+strconv.Itoa(os.Getpid()), 64)
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	g, err := cg.create("executor-left-0", 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	cg2, err := setupCgroups("sweep-test-"+strconv.Itoa(os.Getpid()), 64)
	if err != nil {
		t.Fatal(err)
	}
	defer cg2.close()
	for _, dir := range g.dirs {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s left after the next run started", dir)
		}
	}
}
