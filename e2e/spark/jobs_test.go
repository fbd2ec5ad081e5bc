package spark

// Jobs as users submit them, on the shared cluster, as tenant acme in
// queue etl over TLS: the same jobs as on any Spark, but for the master URL
// and the plugin's jar.

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
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
// and the two records agree. While it runs, Spark's UI links each
// executor's own logs on berth's UI, and its blocks are in its home on its
// worker (what berth fills in for {{APP_ID}}, {{EXECUTOR_ID}} and {{HOME}}
// in the app's env).
func TestSparkJavaJob(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	// 1 s a task, 4 s a stage on two executors: the checks below run while
	// the Pi stage's last tasks and the shuffle's first stage still do.
	r := cl.submit(t, "java", nil, javaJob(8, 1000)...)
	id := r.appID()
	r.waitLog(stageTasksDone(0), 1, 2*time.Minute)
	checkExecutorPlaces(t, cl, r, id)
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

// Spark's pyspark shell, the plugin given with --jars: a person's shuffle
// typed at its prompt runs on berth's executors.
func TestSparkPySparkShell(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	r := cl.shell(t, "pyspark-shell", "print('app', sc.applicationId)\n"+
		"print('answer', sorted(sc.parallelize(range(100), 4).map(lambda x: (x % 3, x)).reduceByKey(lambda a, b: a + b).collect()))\n"+
		"exit()\n")
	id := r.appID()
	r.wait(2*time.Minute, "answer [(0, 1683), (1, 1617), (2, 1650)]")
	a := cl.finished(t, id)
	checkTenantApp(t, a, "PySparkShell")
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

// checkExecutorPlaces checks, while the app runs, each running executor's
// local directory (first: Spark deletes it when the executor stops) and the
// log links Spark's REST API gives each of its executors.
func checkExecutorPlaces(t *testing.T, cl *sparkCluster, r *sparkRun, id string) {
	t.Helper()
	a := cl.app(t, id)
	running := inState(a, wire.ExecutorRunning)
	if len(running) != 2 {
		t.Errorf("executors %s while the job runs, want two RUNNING", describe(a))
	}
	for _, e := range running {
		home := filepath.Join(cl.WorkerByID(e.WorkerID).WorkDir, id, strconv.Itoa(e.ID), "home")
		if dirs, _ := filepath.Glob(filepath.Join(home, "spark-local", "blockmgr-*")); len(dirs) != 1 {
			t.Errorf("executor %d keeps no blocks in %s/spark-local: %v", e.ID, home, dirs)
		}
	}
	if strings.Contains(r.log(), "shuffle: ") {
		t.Errorf("the job had ended before its executors' directories were looked at: the check proves nothing")
	}
	resp, err := http.Get(a.UIURL + "/api/v1/applications/" + id + "/executors")
	if err != nil {
		t.Fatalf("Spark's UI at %q: %v", a.UIURL, err)
	}
	defer resp.Body.Close()
	var execs []struct {
		ID           string            `json:"id"`
		ExecutorLogs map[string]string `json:"executorLogs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&execs); err != nil {
		t.Fatalf("Spark's executors: %v", err)
	}
	seen := 0
	for _, e := range execs {
		if e.ID == "driver" {
			continue
		}
		seen++
		for _, stream := range []string{"stdout", "stderr"} {
			want := cl.Masters[0].URL + "/ui/logs?app=" + id + "&executor=" + e.ID + "&stream=" + stream
			if got := e.ExecutorLogs[stream]; got != want {
				t.Errorf("executor %s's %s link in Spark's UI: %q, want %q", e.ID, stream, got, want)
			}
			// The link's page, on every master: the link names the first,
			// which may not lead (a follower finds the worker in its
			// replica).
			if stream == "stderr" {
				page := strings.TrimPrefix(want, cl.Masters[0].URL)
				for _, m := range cl.Masters {
					if status, body := asOperator(t, m.URL+page+"&raw=1"); status != http.StatusOK || !strings.Contains(body, "CoarseGrainedExecutorBackend") {
						t.Errorf("executor %s's stderr link %s on %s (leader %s): %d %q", e.ID, page, m.ID, cl.leaderURL(t), status, tail(body, 300))
					}
				}
			}
		}
	}
	if seen != 2 {
		t.Errorf("Spark's UI lists %d executors, want 2: %+v", seen, execs)
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

// asOperator GETs url with the operator secret and returns the answer.
func asOperator(t *testing.T, url string) (int, string) {
	t.Helper()
	tr, err := bin.PKI.Transport()
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}
