package spark

// Executors that come and go by design: dynamic allocation's, a
// preemption's for another queue, a drained worker's.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// Dynamic allocation with shuffle tracking: no executor until the first
// job, up to two with it, none once they idle (Spark kills them, berth's
// limit falls to 0 and berth starts none in their place), new ones for the
// second job.
func TestSparkDynamicAllocation(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	gate := filepath.Join(t.TempDir(), "go") // the job idles until it exists
	r := cl.submit(t, "dynamic", []string{
		"spark.executor.instances=0", "spark.dynamicAllocation.enabled=true",
		"spark.dynamicAllocation.shuffleTracking.enabled=true", "spark.dynamicAllocation.maxExecutors=2",
		"spark.dynamicAllocation.executorIdleTimeout=2s", "spark.dynamicAllocation.schedulerBacklogTimeout=1s",
		"spark.dynamicAllocation.sustainedSchedulerBacklogTimeout=1s",
	}, "--class", "Dynamic", appJar, "8", "500", gate)
	id := r.appID()
	r.waitLog(regexp.MustCompile(`round 1: sum 28`), 1, 2*time.Minute)
	r.waitLog(regexp.MustCompile(`idle: no executors`), 1, time.Minute)
	idle := func() error {
		ctx, cancel := callCtx()
		defer cancel()
		a, err := cl.c.App(ctx, id)
		if err != nil {
			return err
		}
		live := len(a.Executors) - len(inState(a, wire.ExecutorKilled)) - len(inState(a, wire.ExecutorExited))
		if live != 0 || a.ExecutorLimit == nil || *a.ExecutorLimit != 0 {
			return fmt.Errorf("idle, the app has %d live executors (%s), limit %v; want none, limit 0", live, describe(a), a.ExecutorLimit)
		}
		return nil
	}
	testproc.Eventually(t, 10*time.Second, "berth's record of the idle app", idle)
	testproc.Stable(t, 2*time.Second, "the idle app's executors killed by Spark, not replaced", idle)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.wait(2*time.Minute, "Dynamic OK")
	a := cl.finished(t, id)
	logged := agree(t, r.log(), a)
	killed := 0
	for id, e := range logged {
		switch e.why {
		case "killed at Spark's request":
			killed++
		case "with the app", "exited":
		default:
			t.Errorf("executor %d: %s; want killed at Spark's request, or ended with the app", id, e.line)
		}
	}
	if n := countBefore(r.log(), "Got job 0", grantedRe); n != 0 {
		t.Errorf("%d executors granted before the first job: want none until there is work", n)
	}
	if first, all := countBefore(r.log(), "idle: no executors", grantedRe), len(a.Executors); first < 1 || all <= first || killed < first {
		t.Errorf("%d executors for the first job, %d in all, %d killed at Spark's request (%s); want new ones for the second job", first, all, killed, describe(a))
	}
}

// countBefore counts the lines matching re before the first line holding
// mark.
func countBefore(log, mark string, re *regexp.Regexp) int {
	if i := strings.Index(log, mark); i >= 0 {
		log = log[:i]
	}
	return len(re.FindAllString(log, -1))
}

// Two queues of one weight, prod with a guarantee of 2 cores: an app of
// batch holds all 4 cores when an app of prod arrives; berth takes two of
// batch's executors back (--preemption-delay 1s, --preemption-grace 3s),
// which Spark is told are not the app's failures, and both jobs finish
// with the right answer.
func TestSparkPreemption(t *testing.T) {
	t.Parallel()
	slots(t, 2)
	cl := startCluster(t, clusterSpec{
		workers: []testcluster.WorkerSpec{worker("w1", 2, "2g"), worker("w2", 2, "2g")},
		flags:   []string{"--preemption-delay", "1s", "--preemption-grace", "3s"},
		queues: map[string]wire.QueueSpec{
			"batch": {Weight: weight(1)},
			"prod":  {Weight: weight(1), Guarantee: &wire.Amount{Cores: 2}},
		},
	})
	// Long enough for prod's driver to start while batch runs: 13 s of
	// tasks on 4 cores.
	batch := cl.submit(t, "batch", []string{"spark.berth.queue=batch", "spark.executor.instances=4"}, javaJob(32, 800)...)
	batchID := batch.appID()
	cl.running(t, batchID, 4, 90*time.Second)
	batch.waitLog(stageTasksDone(0), 1, 90*time.Second)
	prod := cl.submit(t, "prod", []string{"spark.berth.queue=prod"}, javaJob(8, 300)...)
	prodID := prod.appID()
	prod.wait(3*time.Minute, "shuffle: 10 keys, 80000 values; cached count 80000")
	batch.wait(3*time.Minute, "shuffle: 10 keys, 320000 values; cached count 320000")

	b := cl.finished(t, batchID)
	logged := agree(t, batch.log(), b)
	preempted := 0
	for _, e := range b.Executors {
		if e.State == wire.ExecutorKilled && strings.HasPrefix(e.Message, "preempted for queue prod") {
			preempted++
			if got := logged[e.ID]; got.appsFailure || got.why != "preempted" {
				t.Errorf("preempted executor %d in the driver's log: %s", e.ID, got.line)
			}
		}
	}
	if preempted != 2 || appsFailures(logged) != 0 {
		t.Errorf("batch's executors %s: want 2 preempted for queue prod, no failure of the app's", describe(b))
	}
	p := cl.finished(t, prodID)
	agree(t, prod.log(), p)
	if len(p.Executors) != 2 || p.Queue != "prod" || b.Queue != "batch" {
		t.Errorf("prod's app in queue %q: executors %s; batch's in %q; want prod's two, untouched", p.Queue, describe(p), b.Queue)
	}
}

func weight(w float64) *float64 { return &w }

// berth worker drain mid-job, with spark.decommission.enabled and block
// migration: the drained worker's executor is decommissioned as its client
// hears of the drain, hands its cached and shuffle blocks over, and exits
// well before the drain's deadline (EXITED, not LOST at the deadline);
// berth starts another on the third worker and the job finishes.
func TestSparkDrainDecommissions(t *testing.T) {
	t.Parallel()
	slots(t, 1)
	cl := startCluster(t, clusterSpec{workers: []testcluster.WorkerSpec{
		worker("w1", 1, "1g"), worker("w2", 1, "1g"), worker("w3", 1, "1g")}})
	r := cl.submit(t, "drain", []string{
		"spark.decommission.enabled=true", "spark.storage.decommission.enabled=true",
		"spark.storage.decommission.rddBlocks.enabled=true", "spark.storage.decommission.shuffleBlocks.enabled=true",
		// How often it looks again for blocks to move (30s): it exits only
		// after a round that finds none left.
		"spark.storage.decommission.replicationReattemptInterval=1s",
	}, javaJob(20, 800)...) // 8 s a stage: it outlasts the decommission
	id := r.appID()
	execs := cl.running(t, id, 2, 90*time.Second)
	r.waitLog(stageTasksDone(1), 2, 90*time.Second)
	drained := execs[0]
	const deadline = 60 * time.Second
	if out, err := cl.berthCLI("", "worker", "drain", drained.WorkerID, "--deadline", deadline.String()); err != nil {
		t.Fatalf("berth worker drain %s: %v\n%s", drained.WorkerID, err, out)
	}
	start := time.Now()
	cl.appWhen(t, id, deadline, fmt.Sprintf("executor %d on the drained worker %s to end", drained.ID, drained.WorkerID), func(a wire.AppStatus) error {
		if e := executor(t, a, drained.ID); !e.State.Finished() {
			return fmt.Errorf("executor %d %s", e.ID, e.State)
		}
		return nil
	})
	took := time.Since(start)
	r.wait(3*time.Minute, "shuffle: 10 keys, 200000 values; cached count 200000")
	a := cl.finished(t, id)
	logged := agree(t, r.log(), a)
	if e := executor(t, a, drained.ID); e.State != wire.ExecutorExited || !sameCode(e.ExitCode, intp(0)) {
		ctx, cancel := callCtx()
		defer cancel()
		logs, _ := cl.c.ExecutorLogLines(ctx, id, drained.ID, "stderr", 30)
		t.Logf("executor %d's stderr ends:\n%s", drained.ID, logs)
		t.Errorf("the drained executor in berth: %+v; want EXITED 0 (decommissioned), after %s of a %s deadline", e, took, deadline)
	}
	if got := logged[drained.ID]; got.appsFailure {
		t.Errorf("the drained executor in the driver's log: %s", got.line)
	}
	for _, want := range []string{
		fmt.Sprintf("berth: decommissioning executor %d: worker %s is being drained", drained.ID, drained.WorkerID),
		fmt.Sprintf("Decommission executors: %d", drained.ID),
	} {
		if !strings.Contains(r.log(), want) {
			t.Errorf("the driver's log lacks %q", want)
		}
	}
	for _, e := range a.Executors {
		if e.ID >= 2 && e.WorkerID == drained.WorkerID {
			t.Errorf("executor %d placed on the drained worker", e.ID)
		}
	}
	if len(a.Executors) != 3 || appsFailures(logged) != 0 {
		t.Errorf("executors %s: want the drained one replaced once, no failure", describe(a))
	}
}
