package spark

// Jobs as users submit them, on the shared cluster, as tenant acme in
// queue etl over TLS: the same jobs as on any Spark, but for the master URL
// and the plugin's jar.

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// finished waits until berth records the app as FINISHED (its driver
// unregistered it) and returns its final status.
func (cl *sparkCluster) finished(t *testing.T, id string) wire.AppStatus {
	t.Helper()
	return cl.appWhen(t, id, 30*time.Second, "the app FINISHED", func(a wire.AppStatus) error {
		if a.State != wire.AppFinished {
			return errState(a.State)
		}
		return nil
	})
}

type errState wire.AppState

func (e errState) Error() string { return "state " + string(e) }

// checkTenantApp checks what berth says of an app the tests ran as acme
// in etl: its queue, its tenant, its name, and the link to Spark's UI.
func checkTenantApp(t *testing.T, a wire.AppStatus, name string) {
	t.Helper()
	if a.Queue != "etl" || a.Tenant != "acme" || a.Name != name {
		t.Errorf("app %s: queue %q, tenant %q, name %q; want etl, acme, %s", a.ID, a.Queue, a.Tenant, a.Name, name)
	}
	if !strings.HasPrefix(a.UIURL, "http://127.0.0.1:") {
		t.Errorf("app %s: uiUrl %q, want the driver's Spark UI on http://127.0.0.1", a.ID, a.UIURL)
	}
	if a.MemoryPerExecutorMB != 896 || a.CoresPerExecutor != 1 {
		t.Errorf("app %s: %d MB and %d cores per executor, want 896 (512m + 384m overhead) and 1", a.ID, a.MemoryPerExecutorMB, a.CoresPerExecutor)
	}
}

// A Java job from spark-submit: Pi, then a shuffle over a cached RDD read
// twice; the right answer, two executors, each ended once with the app,
// and the two records agree.
func TestSparkJavaJob(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	r := cl.submit(t, "java", nil, javaJob(8, 0)...)
	id := r.appID()
	r.wait(2*time.Minute, "shuffle: 10 keys, 80000 values; cached count 80000")
	if !regexp.MustCompile(`Pi is roughly 3\.1\d`).MatchString(r.log()) {
		t.Errorf("no Pi in the job's output:\n%s", r.proc.LogTail(3000))
	}
	a := cl.finished(t, id)
	checkTenantApp(t, a, "berth-shuffle")
	logged := agree(t, r.log(), a)
	if len(a.Executors) != 2 || appsFailures(logged) != 0 {
		t.Errorf("executors %s, want the two asked for, none failed", describe(a))
	}
}

// A PySpark script from spark-submit: Python workers on the executors, a
// shuffle, a cached RDD, a DataFrame group-by.
func TestSparkPySparkSubmit(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	r := cl.submit(t, "pyspark-submit", nil, exampleDir+"/shuffle_cache.py", "8")
	id := r.appID()
	r.wait(2*time.Minute, "berth-pyspark OK")
	checkPySparkAnswer(t, r, 8)
	a := cl.finished(t, id)
	checkTenantApp(t, a, "berth-pyspark")
	agree(t, r.log(), a)
}

// PySpark from a plain python3 process (the plugin as spark.jars, the rest
// through PYSPARK_SUBMIT_ARGS), asking a GPU per executor and per task:
// every task sees, through Spark, the address berth gave its executor.
func TestSparkPySparkFromPython(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	r := cl.pythonJob(t, "pyspark-python", []string{"spark.executor.resource.gpu.amount=1", "spark.task.resource.gpu.amount=1"}, "6")
	id := r.appID()
	r.wait(2*time.Minute, "berth-pyspark OK")
	checkPySparkAnswer(t, r, 6)
	a := cl.finished(t, id)
	agree(t, r.log(), a)

	// What the tasks saw: ("address Spark gave", "CUDA_VISIBLE_DEVICES berth set").
	m := regexp.MustCompile(`gpu \(spark, berth\): (\[.*\])`).FindStringSubmatch(r.log())
	if m == nil {
		t.Fatalf("the job printed no GPU addresses:\n%s", r.proc.LogTail(3000))
	}
	pairs := regexp.MustCompile(`\('([^']*)', '([^']*)'\)`).FindAllStringSubmatch(m[1], -1)
	var seen, granted []string
	for _, p := range pairs {
		if p[1] != p[2] || p[1] == "" {
			t.Errorf("a task got GPU %q from Spark where berth gave its executor %q", p[1], p[2])
		}
		seen = append(seen, p[1])
	}
	for _, e := range a.Executors {
		if g, ok := e.Resources["gpu"]; ok && len(g.Addresses) == 1 {
			granted = append(granted, g.Addresses[0])
		} else {
			t.Errorf("executor %d was granted GPUs %+v, want one", e.ID, e.Resources)
		}
	}
	slices.Sort(seen)
	slices.Sort(granted)
	if len(seen) == 0 || !isSubset(seen, granted) {
		t.Errorf("tasks saw GPUs %v, berth granted %v", seen, granted)
	}
}

// checkPySparkAnswer checks the PySpark example's printed answer.
func checkPySparkAnswer(t *testing.T, r *sparkRun, tasks int) {
	t.Helper()
	log := r.log()
	for _, want := range []string{
		"cached count " + strconv.Itoa(tasks*1000),
		"sql: [(0, 1683), (1, 1617), (2, 1650)]",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the PySpark job did not print %q:\n%s", want, r.proc.LogTail(3000))
		}
	}
}

func isSubset(small, big []string) bool {
	for _, s := range small {
		if !slices.Contains(big, s) {
			return false
		}
	}
	return true
}
