package spark

// Apps whose executors no worker can start: each ends, within a bound and
// with the reason in the driver's log, instead of waiting for ever for
// executors that never come. Who is to blame decides whose bound ends it:
// the app's own failures (a JVM that will not start) spend Spark's
// spark.executor.maxNumFailures; workers without java or Spark spend none
// of it, and berth's --max-executor-retries ends the app.

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// noStartBound is how long, from the app's registration, an app whose
// executors no worker can start may take to end (docs/SPARK.md): a few
// executors' failed starts and berth's relaunch backoff between them.
const noStartBound = 90 * time.Second

// A bad spark.executor.extraJavaOptions: every executor's JVM refuses its
// options and exits 1, on every worker. That is the app's own failure:
// Spark's spark.executor.maxNumFailures (default max(3, 2 x 2) = 4) is
// spent, and SparkContext's start fails, naming the bound, with the end of
// the last executor's stderr; the driver's log shows each one's stderr.
// (An unknown -XX option would not do: Spark's module options carry
// -XX:+IgnoreUnrecognizedVMOptions. A malformed value still stops the JVM.)
func TestSparkNoWorkerStartsExecutors(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	r := newRun(t, "bad-option")
	cl.startSubmit(r, []string{"spark.executor.extraJavaOptions=" + jvmOptions(r.marker) + " -XX:ThreadStackSize=bogus"}, shortJob()...)
	id := r.appID()
	took := r.fails(noStartBound)
	const jvmSaid = "Improperly specified VM option 'ThreadStackSize=bogus'"
	log := r.log()
	why := regexp.MustCompile(`SparkException: berth: (\d+) executors failed, the most allowed \((\d+), spark\.executor\.maxNumFailures\); the last: [^\n]*its stderr ends: [^\n]*` + regexp.QuoteMeta(jvmSaid))
	m := why.FindStringSubmatch(log)
	if m == nil || m[1] != "4" || m[2] != "4" {
		t.Errorf("the driver's start did not fail with the app's 4 failures, spark.executor.maxNumFailures and its stderr (%q); its log ends:\n%s", m, r.proc.LogTail(6000))
	}
	if !regexp.MustCompile(`the end of executor \d+'s stderr:\n\s+` + regexp.QuoteMeta(jvmSaid)).MatchString(log) {
		t.Errorf("the driver's log does not show the executors' stderr (%q)", jvmSaid)
	}
	a := cl.appWhen(t, id, 30*time.Second, "the app ended", func(a wire.AppStatus) error {
		if !a.State.Finished() {
			return errState(a.State)
		}
		return nil
	})
	logged := agree(t, log, a)
	if n := appsFailures(logged); n < 4 || n != len(a.Executors) {
		t.Errorf("executors %s: %d ends the app's failures in the driver's log; want every one, at least 4", describe(a), n)
	}
	for _, e := range a.Executors {
		if e.State != wire.ExecutorFailed || e.Cause != wire.CauseProcess || !sameCode(e.ExitCode, intp(1)) {
			t.Errorf("executor %d: %+v; want FAILED 1, the process's own", e.ID, e)
		}
	}
	t.Logf("the app's start failed %s after its registration, after %d executors", took.Round(100*time.Millisecond), len(a.Executors))
}

// Every worker lacks java: each executor's launcher says so and exits 127
// before any JVM, which the driver does not count against the app (with
// spark.executor.maxNumFailures=1, one counted would end it at once). berth
// keeps the app off each worker after two failures there, but never off
// every one: its failures count toward berth's --max-executor-retries (10
// in a row, none running), and berth ends the app; SparkContext's start
// fails with berth's reason, the launcher's words in the driver's log.
func TestSparkNoWorkerHasJava(t *testing.T) {
	t.Parallel()
	slots(t, 1)
	nojava := t.TempDir()
	var workers []testcluster.WorkerSpec
	for _, id := range []string{"w1", "w2"} {
		w := worker(id, 1, "1g")
		w.Env = []string{"PATH=" + nojava, "JAVA_HOME=" + nojava}
		workers = append(workers, w)
	}
	cl := startCluster(t, clusterSpec{workers: workers})
	r := cl.submit(t, "no-java", []string{"spark.executor.maxNumFailures=1"}, shortJob()...)
	id := r.appID()
	took := r.fails(noStartBound)
	log := r.log()
	if !regexp.MustCompile(`SparkException: berth ended app ` + regexp.QuoteMeta(id) + ` \(FAILED\): 10 executors failed in a row with none running`).MatchString(log) {
		t.Errorf("the driver's start did not fail with berth's reason; its log ends:\n%s", r.proc.LogTail(6000))
	}
	if said := "berth: no java at " + nojava + "/bin/java on this worker"; !strings.Contains(log, said) {
		t.Errorf("the driver's log lacks the launcher's %q", said)
	}
	if strings.Contains(log, "spark.executor.maxNumFailures") {
		t.Errorf("the driver counted a worker's lack of java against the app (spark.executor.maxNumFailures)")
	}
	a := cl.app(t, id)
	if a.State != wire.AppFailed || !strings.Contains(a.Message, "10 executors failed in a row") {
		t.Errorf("app %s: %s %q; want FAILED by berth, 10 executors failed in a row", id, a.State, a.Message)
	}
	logged := agree(t, log, a)
	for _, e := range a.Executors {
		if got := logged[e.ID]; got.appsFailure || !strings.HasPrefix(got.why, workerLacksWhy) {
			t.Errorf("executor %d in the driver's log: %s; want not the app's failure (%s...)", e.ID, got.line, workerLacksWhy)
		}
	}
	t.Logf("berth ended the app %s after its registration, after %d executors", took.Round(100*time.Millisecond), len(a.Executors))
}

// fails waits for the driver to exit, within the given time of its app's
// registration, and fails the test unless it exited non-zero; it returns
// how long that took.
func (r *sparkRun) fails(within time.Duration) time.Duration {
	r.t.Helper()
	start := time.Now()
	select {
	case <-r.proc.Done():
	case <-time.After(within):
		r.t.Fatalf("%s still runs %s after its app registered; its log ends:\n%s", r.name, within, r.proc.LogTail(6000))
	}
	if r.proc.Err() == nil {
		r.t.Fatalf("%s exited 0; want its start to fail. Its log ends:\n%s", r.name, r.proc.LogTail(6000))
	}
	return time.Since(start)
}
