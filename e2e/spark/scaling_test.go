package spark

// Executors that come and go by design: dynamic allocation's, a
// preemption's for another queue (a drained worker's: drain_test.go).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// Dynamic allocation with shuffle tracking: no executor until the first
// job; with it, berth's limit follows each total Spark asks for at once,
// up to two. While the job's last task runs on (held until the test says),
// Spark's target falls to one and it kills the idle executor: berth's
// limit is 1, and berth starts none in its place. Once the job is done and
// its executors idle, Spark kills them, berth's limit falls to 0 and berth
// starts none in their place; the second job brings new ones.
func TestSparkDynamicAllocation(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	dir := t.TempDir()
	gate, hold := filepath.Join(dir, "go"), filepath.Join(dir, "hold") // the job idles, its last task waits, until each exists
	r := cl.submit(t, "dynamic", []string{
		"spark.executor.instances=0", "spark.dynamicAllocation.enabled=true",
		"spark.dynamicAllocation.shuffleTracking.enabled=true", "spark.dynamicAllocation.maxExecutors=2",
		"spark.dynamicAllocation.executorIdleTimeout=2s", "spark.dynamicAllocation.schedulerBacklogTimeout=1s",
		"spark.dynamicAllocation.sustainedSchedulerBacklogTimeout=1s",
	}, "--class", "Dynamic", appJar, "8", "500", gate, hold)
	id := r.appID()
	events := cl.follow(t, id)
	r.waitLog(desiredRe, 2, 2*time.Minute) // 1, then 2
	for _, want := range desired(r.log()) {
		testproc.Eventually(t, 5*time.Second, fmt.Sprintf("berth's executor limit set to Spark's target %d", want), func() error {
			if got := events.limits(); !slices.Contains(got, want) {
				return fmt.Errorf("berth's limits so far: %v", got)
			}
			return nil
		})
	}

	// The last task runs on: one executor is killed at Spark's request
	// while the limit is 1, and not replaced.
	var killed wire.ExecutorStatus
	held := cl.appWhen(t, id, time.Minute, "an executor killed at Spark's request, one left", func(a wire.AppStatus) error {
		k := inState(a, wire.ExecutorKilled)
		if len(k) != 1 || live(a) != 1 {
			return fmt.Errorf("%d killed, %d live", len(k), live(a))
		}
		killed = k[0]
		return nil
	})
	if strings.Contains(r.log(), "round 1:") {
		t.Fatalf("the first job ended before its held task was let go")
	}
	if l := events.limitAt(killed.ID); l != 1 {
		t.Errorf("executor %d killed at Spark's request with berth's limit at %d; want 1, the job's last task running", killed.ID, l)
	}
	testproc.Stable(t, 3*time.Second, "the executor Spark killed at limit 1 not replaced", func() error {
		a := cl.app(t, id)
		if len(a.Executors) != len(held.Executors) || live(a) != 1 || a.ExecutorLimit == nil || *a.ExecutorLimit != 1 {
			return fmt.Errorf("executors %s, %d live, limit %v; want %s, 1 live, limit 1", describe(a), live(a), a.ExecutorLimit, describe(held))
		}
		return nil
	})
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	r.waitLog(regexp.MustCompile(`round 1: sum 28`), 1, 2*time.Minute)
	r.waitLog(regexp.MustCompile(`idle: no executors`), 1, time.Minute)
	idle := func() error {
		ctx, cancel := callCtx()
		defer cancel()
		a, err := cl.c.App(ctx, id)
		if err != nil {
			return err
		}
		if live(a) != 0 || a.ExecutorLimit == nil || *a.ExecutorLimit != 0 {
			return fmt.Errorf("idle, the app has %d live executors (%s), limit %v; want none, limit 0", live(a), describe(a), a.ExecutorLimit)
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
	killedBySpark := 0
	for id, e := range logged {
		switch e.why {
		case "killed at Spark's request":
			killedBySpark++
		case "with the app", "exited":
		default:
			t.Errorf("executor %d: %s; want killed at Spark's request, or ended with the app", id, e.line)
		}
	}
	if e := logged[killed.ID]; e.why != "killed at Spark's request" {
		t.Errorf("executor %d, killed while the job ran: %s", killed.ID, e.line)
	}
	if n := countBefore(r.log(), "Got job 0", grantedRe); n != 0 {
		t.Errorf("%d executors granted before the first job: want none until there is work", n)
	}
	if first, all := countBefore(r.log(), "idle: no executors", grantedRe), len(a.Executors); first < 2 || all <= first || killedBySpark < first {
		t.Errorf("%d executors for the first job, %d in all, %d killed at Spark's request (%s); want 2 for the first job, new ones for the second", first, all, killedBySpark, describe(a))
	}
	// Every total Spark asked for, the second job's too, became berth's limit.
	for _, want := range desired(r.log()) {
		if !slices.Contains(events.limits(), want) {
			t.Errorf("Spark asked for %d executors; berth's limits were %v", want, events.limits())
		}
	}
}

// desiredRe matches Spark's request for more executors (dynamic
// allocation's), with its new total.
var desiredRe = regexp.MustCompile(`new desired total will be (\d+) `)

// desired lists the totals Spark asked for, in order.
func desired(log string) []int {
	var out []int
	for _, m := range desiredRe.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// live counts the app's executors that have not ended.
func live(a wire.AppStatus) int {
	n := 0
	for _, e := range a.Executors {
		if !e.State.Finished() {
			n++
		}
	}
	return n
}

// appEvents is what berth told of an app on its event stream, in order.
type appEvents struct {
	mu  sync.Mutex
	evs []wire.AppEvent
}

// follow records the app's events, as the operator, until the test ends.
func (cl *sparkCluster) follow(t *testing.T, id string) *appEvents {
	rec := &appEvents{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cl.c.Events(ctx, id, func(ev wire.AppEvent) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.evs = append(rec.evs, ev)
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return rec
}

var limitRe = regexp.MustCompile(`^executor limit set to (\d+) `)

// limits lists the executor limits berth set, in order.
func (r *appEvents) limits() []int {
	l, _ := r.scan(-1)
	return l
}

// limitAt is berth's executor limit when executor id ended (-1: unknown).
func (r *appEvents) limitAt(id int) int {
	_, at := r.scan(id)
	return at
}

// scan lists the limits set, and the one in force when executor id ended.
func (r *appEvents) scan(id int) (limits []int, at int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at = -1
	cur := -1
	for _, ev := range r.evs {
		switch {
		case ev.Type == wire.EventSnapshot && ev.App.ExecutorLimit != nil:
			cur = *ev.App.ExecutorLimit
		case ev.Type == wire.EventExecutorLimitChanged:
			if m := limitRe.FindStringSubmatch(ev.Message); m != nil {
				cur, _ = strconv.Atoi(m[1])
				limits = append(limits, cur)
			}
		case ev.Executor != nil && ev.Executor.ID == id && ev.Executor.State.Finished() && at < 0:
			at = cur
		}
	}
	return limits, at
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
// which Spark is told are not the app's failures (batch runs with
// noBudget: one counted would fail its job), and both jobs finish with the
// right answer.
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
	batch := cl.submit(t, "batch", append([]string{"spark.berth.queue=batch", "spark.executor.instances=4"}, noBudget...), javaJob(32, 800)...)
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
