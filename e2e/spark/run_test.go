package spark

// Spark drivers the tests start (spark-submit in client mode, or plain
// python3), the executors they have berth start, and their logs.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
)

// sparkSlots bounds the Spark apps running at once: each is three JVMs
// (a driver, two executors) on a machine of two cores.
var (
	sparkSlots = make(chan struct{}, 2)
	slotsMu    sync.Mutex // taking several slots at once
)

// slots waits for n of sparkSlots and gives them back when the test ends.
func slots(t *testing.T, n int) {
	t.Helper()
	slotsMu.Lock()
	for range n {
		sparkSlots <- struct{}{}
	}
	slotsMu.Unlock()
	start := time.Now()
	t.Cleanup(func() {
		for range n {
			<-sparkSlots
		}
		t.Logf("held %d of the %d Spark slots for %s", n, cap(sparkSlots), time.Since(start).Round(100*time.Millisecond))
	})
}

// sparkRun is one Spark driver the test started; marker is on the command
// line of the driver's JVM and of every executor JVM of its app.
type sparkRun struct {
	t      *testing.T
	name   string
	proc   *testcluster.Proc
	marker string
	stdin  string // what a shell reads: its commands
}

var markers atomic.Int64

// commonConf is every app's settings: the driver on 127.0.0.1 with ports
// Spark picks, berth's queue etl, two executors of one core and 512m
// (896 MB with the overhead) that start fast, and marker on the command
// line of each JVM.
func commonConf(marker string) []string {
	jvm := jvmOptions(marker)
	var cds []string
	if cdsArchive != "" {
		// The archive's class path, spark-submit's, must begin the
		// executors' too.
		cds = []string{"spark.executor.extraClassPath=" + cdsPath}
	}
	return append(cds,
		"spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.ui.port=0",
		"spark.driver.memory=512m", "spark.executor.memory=512m", "spark.executor.cores=1", "spark.executor.instances=2",
		"spark.driver.extraJavaOptions="+jvm, "spark.executor.extraJavaOptions="+jvm,
		"spark.berth.queue=etl", "spark.berth.statusInterval=1s", "spark.ui.showConsoleProgress=false",
		"spark.sql.shuffle.partitions=4",
	)
}

// jvmOptions are the drivers' and executors' java options: fast to start,
// the tests' logging, and marker.
func jvmOptions(marker string) string {
	jvm := jvmFlags
	if cdsArchive != "" {
		jvm += " -XX:SharedArchiveFile=" + cdsArchive
	}
	return jvm + " -Dlog4j.configurationFile=" + log4jConf + " -Dberth.e2e=" + marker
}

// submitArgs is spark-submit's command line for an app of cl: the common
// settings, then conf (which win), then the app and its arguments.
func (cl *sparkCluster) submitArgs(marker string, conf []string, app ...string) []string {
	args := []string{"--master", cl.sparkMaster(), "--deploy-mode", "client", "--jars", pluginJar}
	for _, c := range append(commonConf(marker), conf...) {
		args = append(args, "--conf", c)
	}
	return append(args, app...)
}

// driverEnv is the environment of a driver run as tenant acme: its token
// and the cluster's CA, berth's way (BERTH_TOKEN, BERTH_TLS_CA_FILE), and
// the venv's python for PySpark (which executors are told to use too).
func (cl *sparkCluster) driverEnv() []string {
	return []string{"BERTH_TOKEN=" + cl.token, "BERTH_TLS_CA_FILE=" + bin.PKI.CAFile(), "BERTH_SECRET=",
		"SPARK_HOME=" + sparkHome, "PYSPARK_PYTHON=" + python, "SPARK_LOCAL_IP=127.0.0.1"}
}

// javaJob is the example Java job, BerthShuffle, with its tasks and each
// task's sleep.
func javaJob(tasks, sleepMs int) []string {
	return []string{"--class", "BerthShuffle", appJar, strconv.Itoa(tasks), strconv.Itoa(sleepMs)}
}

// submit starts spark-submit as tenant acme.
func (cl *sparkCluster) submit(t *testing.T, name string, conf []string, app ...string) *sparkRun {
	t.Helper()
	r := newRun(t, name)
	cl.startSubmit(r, conf, app...)
	return r
}

// startSubmit starts spark-submit as tenant acme for a run of newRun's
// (whose marker conf may name).
func (cl *sparkCluster) startSubmit(r *sparkRun, conf []string, app ...string) {
	r.t.Helper()
	r.start(filepath.Join(sparkHome, "bin", "spark-submit"), cl.submitArgs(r.marker, conf, app...), cl.driverEnv())
}

// pythonJob starts the example PySpark job from plain python3: MASTER and
// BERTH_SPARK_JAR tell the script itself, the other settings go through
// PYSPARK_SUBMIT_ARGS.
func (cl *sparkCluster) pythonJob(t *testing.T, name string, conf []string, args ...string) *sparkRun {
	t.Helper()
	r := newRun(t, name)
	var submit []string
	for _, c := range append(commonConf(r.marker), conf...) {
		submit = append(submit, "--conf", strconv.Quote(c))
	}
	env := append(cl.driverEnv(), "MASTER="+cl.sparkMaster(), "BERTH_SPARK_JAR="+pluginJar,
		"PYSPARK_SUBMIT_ARGS="+strings.Join(submit, " ")+" pyspark-shell")
	r.start(python, append([]string{filepath.Join(exampleDir, "shuffle_cache.py")}, args...), env)
	return r
}

// shell starts Spark's pyspark shell as tenant acme, the plugin through
// --jars, and types commands into it (python -i: the shell's own startup,
// which makes sc and spark, then the commands, as a person would).
func (cl *sparkCluster) shell(t *testing.T, name, commands string) *sparkRun {
	t.Helper()
	r := newRun(t, name)
	r.stdin = commands
	env := append(cl.driverEnv(), "PYSPARK_DRIVER_PYTHON="+python, "PYSPARK_DRIVER_PYTHON_OPTS=-i")
	r.start(filepath.Join(sparkHome, "bin", "pyspark"), cl.submitArgs(r.marker, nil), env)
	return r
}

func newRun(t *testing.T, name string) *sparkRun {
	r := &sparkRun{t: t, name: name, marker: fmt.Sprintf("%d.%d", os.Getpid(), markers.Add(1))}
	// Registered first, so that it runs last: whatever JVM of this run is
	// left (an executor, a driver under python) is killed by pid.
	t.Cleanup(func() {
		for _, p := range testcluster.Marked("-Dberth.e2e=" + r.marker + " ") {
			syscall.Kill(p.Pid, syscall.SIGKILL)
		}
	})
	return r
}

func (r *sparkRun) start(path string, args, env []string) {
	r.t.Helper()
	dir := r.t.TempDir()
	dumpLogsOnFailure(r.t, dir)
	if keep := os.Getenv("BERTH_E2E_SPARK_LOGS"); keep != "" {
		// For people: every driver's log, kept after the test.
		r.t.Cleanup(func() {
			data, _ := os.ReadFile(r.proc.Log)
			os.WriteFile(filepath.Join(keep, r.t.Name()+"-"+r.name+".log"), data, 0o644)
		})
	}
	p, err := testcluster.Start(r.t, r.name, path, filepath.Join(dir, r.name+".log"), args, testcluster.ProcOptions{Env: env, Stdin: r.stdin})
	if err != nil {
		r.t.Fatal(err)
	}
	r.proc = p
}

// log is what the driver printed so far, stdout and stderr.
func (r *sparkRun) log() string {
	data, _ := os.ReadFile(r.proc.Log)
	return string(data)
}

// count is how many lines of the driver's log match re.
func (r *sparkRun) count(re *regexp.Regexp) int { return len(re.FindAllString(r.log(), -1)) }

// waitLog waits until n lines of the driver's log match re (and fails the
// test if the driver exits first).
func (r *sparkRun) waitLog(re *regexp.Regexp, n int, within time.Duration) {
	r.t.Helper()
	testproc.Eventually(r.t, within, fmt.Sprintf("%d lines matching %q in %s's log", n, re, r.name), func() error {
		if got := r.count(re); got >= n {
			return nil
		} else if r.proc.Exited() {
			r.t.Fatalf("%s exited (%v) before %d lines matched %q (%d did); its log ends:\n%s", r.name, r.proc.Err(), n, re, got, r.proc.LogTail(4000))
		}
		return fmt.Errorf("%d so far", r.count(re))
	})
}

var registeredRe = regexp.MustCompile(`berth: registered app (\S+)`)

// appID waits for the plugin's registration and returns berth's app id.
func (r *sparkRun) appID() string {
	r.t.Helper()
	r.waitLog(registeredRe, 1, 90*time.Second)
	return registeredRe.FindStringSubmatch(r.log())[1]
}

// wait waits for the driver to exit and fails the test unless it exited 0
// and printed want (its job's answer).
func (r *sparkRun) wait(within time.Duration, want string) {
	r.t.Helper()
	select {
	case <-r.proc.Done():
	case <-time.After(within):
		r.t.Fatalf("%s still runs after %s; its log ends:\n%s", r.name, within, r.proc.LogTail(4000))
	}
	if err := r.proc.Err(); err != nil || !strings.Contains(r.log(), want) {
		r.t.Fatalf("%s exited (%v) without printing %q; its log ends:\n%s", r.name, err, want, r.proc.LogTail(6000))
	}
}

// stageTasksDone matches the scheduler's line for a task of stage n done.
func stageTasksDone(stage int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`Finished task \S+ in stage %d\.\d+ `, stage))
}

var executorArgRe = regexp.MustCompile(`--executor-id (\d+) `)

// executorPids maps the ids of the run's live executor JVMs to their pids.
func (r *sparkRun) executorPids() map[int]int {
	out := map[int]int{}
	for _, p := range testcluster.Marked("-Dberth.e2e=" + r.marker + " ") {
		if m := executorArgRe.FindStringSubmatch(p.Cmdline + " "); m != nil && strings.Contains(p.Cmdline, "CoarseGrainedExecutorBackend") {
			id, _ := strconv.Atoi(m[1])
			out[id] = p.Pid
		}
	}
	return out
}

// killExecutors kills executors' JVMs with SIGKILL, by pid, as a person
// would; the test fails if one of them has no process.
func (r *sparkRun) killExecutors(ids ...int) {
	r.t.Helper()
	pids := r.executorPids()
	for _, id := range ids {
		pid, ok := pids[id]
		if !ok {
			r.t.Fatalf("executor %d of %s has no process (live ones: %v)", id, r.name, pids)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			r.t.Fatalf("kill -9 %d (executor %d): %v", pid, id, err)
		}
	}
}
