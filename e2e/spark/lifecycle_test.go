package spark

// What befalls executors under a running job: their processes killed, their
// worker killed, a worker that cannot start them, berth's leader killed.
// Each job is the example's (BerthShuffle: Pi, then a shuffle over a cached
// RDD), slowed by a sleep in every task, and must still give the right
// answer.

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// slowJob: 12 tasks of 800 ms in each of its two stages that sleep, about
// 5 s a stage on two 1-core executors; slowJobOK its answer. shortJob and
// shortJobOK: 10 tasks of 600 ms, 3 s a stage.
func slowJob() []string  { return javaJob(12, 800) }
func shortJob() []string { return javaJob(10, 600) }

const (
	slowJobOK  = "shuffle: 10 keys, 120000 values; cached count 120000"
	shortJobOK = "shuffle: 10 keys, 100000 values; cached count 100000"
)

// noBudget leaves Spark no failures to spare: one task failure counted
// fails the job (spark.task.maxFailures), one executor end counted against
// the app ends it (spark.executor.maxNumFailures). A test of losses that
// are not the app's runs with it: a loss wrongly blamed on the app fails
// the job, where the log's end lines alone would not show it.
var noBudget = []string{"spark.task.maxFailures=1", "spark.executor.maxNumFailures=1"}

// replaced checks that the log's ends of the given executors are none of
// the app's failures, for why, and that the app got others in their place.
func replaced(t *testing.T, logged map[int]end, a wire.AppStatus, why string, ids ...int) {
	t.Helper()
	for _, id := range ids {
		if e, ok := logged[id]; !ok || e.appsFailure || e.why != why {
			t.Errorf("executor %d's end in the driver's log: %+v; want not the app's failure (%s)", id, e, why)
		}
	}
	if len(a.Executors) < 2+len(ids) {
		t.Errorf("executors %s: want %d in all, the killed replaced", describe(a), 2+len(ids))
	}
	if n := appsFailures(logged); n != 0 {
		t.Errorf("%d executor ends counted as the app's failures, want none", n)
	}
}

// Executors' JVMs killed with SIGKILL by a person mid-job: first one,
// while Pi's stage runs (the other carries on), then, once berth's
// replacement has registered, every executor at once, while the shuffle
// over the cached RDD runs (the app has none for a while). berth says
// FAILED, cause signal, each time; Spark counts none against the tasks or
// the app (with noBudget, one counted would fail the job); berth starts
// others; the answer is right.
func TestSparkExecutorsKilled(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	r := cl.submit(t, "kill", noBudget, javaJob(20, 600)...) // 6 s a stage on two executors
	id := r.appID()
	cl.running(t, id, 2, 90*time.Second)
	r.waitLog(stageTasksDone(0), 2, 90*time.Second)
	r.killExecutors(0)
	r.waitLog(regexp.MustCompile(`Registered executor .* with ID 2,`), 1, 90*time.Second)
	if strings.Contains(r.log(), "shuffle: 10 keys") {
		t.Fatalf("the job was done before the replacement executor came: too short to kill them all under")
	}
	r.killExecutors(1, 2)
	r.wait(3*time.Minute, "shuffle: 10 keys, 200000 values; cached count 200000")
	a := cl.finished(t, id)
	logged := agree(t, r.log(), a)
	for _, kill := range []int{0, 1, 2} {
		if e := executor(t, a, kill); e.State != wire.ExecutorFailed || e.Cause != wire.CauseSignal || !sameCode(e.ExitCode, intp(137)) {
			t.Errorf("killed executor %d in berth: %+v; want FAILED 137, cause signal", kill, e)
		}
	}
	replaced(t, logged, a, "a signal berth did not send", 0, 1, 2)
}

// Mid-job, the worker of one executor is killed with SIGKILL and the
// worker of the other frozen with SIGSTOP, longer than the masters' worker
// timeout (5 s), while the executors it started run on. Once the masters
// give up on the two workers, berth says LOST for both executors, which
// is no failure of the app's, and starts others on the two spare
// workers. When the frozen worker thaws, it learns its executor ended and
// stops its process (no JVM of a LOST executor runs on), and the answer
// is right, with noBudget: neither loss was counted against a task or the
// app.
func TestSparkWorkerKilledAndFrozen(t *testing.T) {
	t.Parallel()
	slots(t, 1)
	cl := startCluster(t, clusterSpec{workers: []testcluster.WorkerSpec{
		worker("w1", 1, "1g"), worker("w2", 1, "1g"), worker("w3", 1, "1g"), worker("w4", 1, "1g")}})
	r := cl.submit(t, "kill-worker", noBudget, javaJob(16, 700)...) // 6 s a stage on two executors
	id := r.appID()
	execs := cl.running(t, id, 2, 90*time.Second)
	r.waitLog(stageTasksDone(0), 2, 90*time.Second)
	killed, frozen := cl.WorkerByID(execs[0].WorkerID), cl.WorkerByID(execs[1].WorkerID)
	if err := killed.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := frozen.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := frozen.Signal(syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT %s: %v", frozen.ID, err)
			}
		}
	}
	t.Cleanup(thaw) // the harness stops it by pid, which a stopped process ignores
	cl.appWhen(t, id, 60*time.Second, "both executors LOST", func(a wire.AppStatus) error {
		for _, e := range execs {
			if got := executor(t, a, e.ID); got.State != wire.ExecutorLost {
				return fmt.Errorf("executor %d is %s", e.ID, got.State)
			}
		}
		return nil
	})
	// Frozen past every timeout, then thawed: its executor's JVM, which ran
	// on all along, is stopped by the worker.
	thaw()
	testproc.Eventually(t, 60*time.Second, "the LOST executor's JVM on the thawed worker gone", func() error {
		if pid, ok := r.executorPids()[execs[1].ID]; ok {
			return fmt.Errorf("executor %d's JVM (pid %d) still runs", execs[1].ID, pid)
		}
		return nil
	})
	r.wait(3*time.Minute, "shuffle: 10 keys, 160000 values; cached count 160000")
	a := cl.finished(t, id)
	logged := agree(t, r.log(), a)
	replaced(t, logged, a, "lost", execs[0].ID, execs[1].ID)
	for _, e := range a.Executors {
		if e.ID >= 2 && e.WorkerID == killed.ID {
			t.Errorf("executor %d placed on the dead worker %s", e.ID, killed.ID)
		}
	}
}

// Two workers without java, with the most free cores, so berth tries them
// first: one's JAVA_HOME holds no bin/java, the other has no JAVA_HOME and
// no java in its PATH. The launcher says so on stderr and exits 127 before
// any JVM, berth says FAILED 127 (the process's own), and the driver blames
// the worker, not the app: with spark.executor.maxNumFailures=1, one such
// end counted against the app would end it. The driver's log shows the
// launcher's words; berth keeps the app off each bad worker after two
// failures there (a third may be launched in the round before the
// second's report reaches the master, so three are allowed, no more), and
// the job runs on the two good workers.
func TestSparkBadWorkerAvoided(t *testing.T) {
	t.Parallel()
	slots(t, 1)
	nojava := t.TempDir()
	bad := worker("nojava", 4, "4g")
	bad.Env = []string{"PATH=" + nojava, "JAVA_HOME=" + nojava}
	nopath := worker("nopath", 4, "4g")
	nopath.Env = []string{"PATH=" + nojava, "JAVA_HOME="}
	said := map[string]string{ // the launcher's words on each bad worker
		"nojava": "berth: no java at " + nojava + "/bin/java on this worker",
		"nopath": "berth: no java on this worker: no JAVA_HOME, and none in its PATH " + nojava,
	}
	cl := startCluster(t, clusterSpec{workers: []testcluster.WorkerSpec{bad, nopath, worker("w1", 1, "1g"), worker("w2", 1, "1g")}})
	r := cl.submit(t, "bad-worker", []string{"spark.executor.maxNumFailures=1", "spark.task.maxFailures=1"}, shortJob()...)
	id := r.appID()
	r.wait(3*time.Minute, shortJobOK)
	a := cl.finished(t, id)
	logged := agree(t, r.log(), a)
	onBad := map[string]int{}
	for _, e := range a.Executors {
		if said[e.WorkerID] == "" {
			continue
		}
		onBad[e.WorkerID]++
		if e.State != wire.ExecutorFailed || e.Cause != wire.CauseProcess || !sameCode(e.ExitCode, intp(127)) {
			t.Errorf("executor %d on the worker without java: %+v, want FAILED 127", e.ID, e)
		}
		if got := logged[e.ID]; got.appsFailure || !strings.HasPrefix(got.why, workerLacksWhy) {
			t.Errorf("executor %d on the worker without java, in the driver's log: %s; want not the app's failure (%s...)", e.ID, got.line, workerLacksWhy)
		}
	}
	for w, n := range onBad {
		if n > 3 {
			t.Errorf("%d executors placed on %s, which has no java (%s); want berth to keep the app off it after two", n, w, describe(a))
		}
		if !strings.Contains(r.log(), said[w]) {
			t.Errorf("the driver's log does not show why the executors on %s failed (their launcher's %q)", w, said[w])
		}
	}
	if len(onBad) == 0 {
		t.Errorf("no executor placed on a worker without java (%s): the test shows nothing", describe(a))
	}
	if n := appsFailures(logged); n != 0 {
		t.Errorf("the driver counted %d executor ends as the app's failures, want none", n)
	}
	if last := endedWithApp(logged); len(last) != 2 || said[executor(t, a, last[0]).WorkerID] != "" || said[executor(t, a, last[1]).WorkerID] != "" {
		t.Errorf("executors %s: want two running to the app's end, on w1 and w2", describe(a))
	}
}

// berth's leader killed with SIGKILL mid-job: the plugin follows the new
// leader (its event stream, its calls), no executor is lost or replaced,
// and the app ends FINISHED on the new leader.
func TestSparkLeaderKilled(t *testing.T) {
	t.Parallel()
	slots(t, 1)
	cl := startCluster(t, clusterSpec{workers: []testcluster.WorkerSpec{worker("w1", 1, "1g"), worker("w2", 1, "1g")}})
	r := cl.submit(t, "kill-leader", nil, slowJob()...) // longer than a failover
	id := r.appID()
	cl.running(t, id, 2, 90*time.Second)
	r.waitLog(stageTasksDone(0), 2, 90*time.Second)
	ctx, cancel := callCtx()
	defer cancel()
	old, _, err := cl.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Proc().Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 30*time.Second, "a new leader", func() error {
		ctx, cancel := callCtx()
		defer cancel()
		m, _, err := cl.Leader(ctx)
		if err == nil && m == old {
			err = fmt.Errorf("%s still leads", m.ID)
		}
		return err
	})
	// The job runs on through the failover: the new leader has the app
	// with its two executors RUNNING (the workers and the driver back to
	// it) while the job has yet to end.
	cl.running(t, id, 2, 30*time.Second)
	if strings.Contains(r.log(), slowJobOK) {
		t.Errorf("the job had ended by the time the new leader had it running: the test shows no job running through a failover")
	}
	r.wait(3*time.Minute, slowJobOK)
	if !strings.Contains(r.log(), "berth: the leader is now") {
		t.Errorf("the driver's log does not say it follows a new leader")
	}
	a := cl.finished(t, id)
	logged := agree(t, r.log(), a)
	if len(a.Executors) != 2 {
		t.Errorf("executors %s: want the first two only, none lost or replaced", describe(a))
	}
	if last := endedWithApp(logged); len(last) != len(logged) {
		t.Errorf("executors ended before the app did: %s", describe(a))
	}
}

func intp(i int) *int { return &i }

// callCtx is a context for one call.
func callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// executor is the app's executor of the id; the test fails if it has none.
func executor(t *testing.T, a wire.AppStatus, id int) wire.ExecutorStatus {
	t.Helper()
	for _, e := range a.Executors {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("app %s has no executor %d: %s", a.ID, id, describe(a))
	return wire.ExecutorStatus{}
}

// endedWithApp lists the executors whose end the log says came with the
// app's (killed as it ended, or exited when Spark stopped them).
func endedWithApp(logged map[int]end) []int {
	var out []int
	for id, e := range logged {
		if e.why == "with the app" || e.why == "exited" {
			out = append(out, id)
		}
	}
	sort.Ints(out)
	return out
}
