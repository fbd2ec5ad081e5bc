package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// TestQueuesGuaranteeBesideExecutorsOfNoFixedSize is issue 33's loop with
// the real binaries: two workers of 4 cores; etl guaranteed 3 cores; two
// apps of default with no fixed executor size (Spark's when
// spark.executor.cores is unset), one of at most 4 cores, hold 2 cores
// on each worker; an etl app asks for one 3-core executor. The plan takes
// two 2-core executors on one worker; while they end, the room they free
// is held for etl (before, default's apps relaunched on it, and 1,424
// executors were preempted in 35 s with etl never started). etl's
// executor runs within the delay, the grace and a few rounds; no more
// than those two are taken; and default's apps then take the core etl
// leaves (the hold given back).
func TestQueuesGuaranteeBesideExecutorsOfNoFixedSize(t *testing.T) {
	t.Parallel()
	const delay, grace = 2 * time.Second, time.Second
	cl := startCluster(t, clusterSpec{flags: queuesFlags(delay, grace), workers: []string{"w1", "w2"}, cores: 4, memory: "2g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"etl": {Guarantee: &wire.Amount{Cores: 3}}})
	dir := t.TempDir()
	wholeApp := func(name string, maxCores int) wire.AppDescription {
		d := cl.termApp(name, wire.DefaultQueue, maxCores, dir, true)
		d.CoresPerExecutor = 0
		return d
	}
	capped := cl.registerApp(t, wholeApp("capped", 4))
	cl.runningApp(capped, 2, 20*time.Second)
	open := cl.registerApp(t, wholeApp("open", 0))
	cl.runningApp(open, 2, 20*time.Second)
	etlDesc := cl.termApp("etl", "etl", 3, dir, true)
	etlDesc.CoresPerExecutor = 3
	etl := cl.registerApp(t, etlDesc)
	cl.runningApp(etl, 1, delay+grace+20*time.Second)
	cl.statusWhen(20*time.Second, "default's apps on the 5 cores etl leaves", func(st wire.ClusterStatus) error {
		a, _ := appStatus(st, capped)
		b, _ := appStatus(st, open)
		if a.CoresGranted+b.CoresGranted != 5 {
			return fmt.Errorf("default's apps hold %d and %d cores", a.CoresGranted, b.CoresGranted)
		}
		return nil
	})
	qs, err := cl.c.Queues(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := queueIn(qs, wire.DefaultQueue); q.Preemptions > 2 {
		t.Errorf("default lost %d executors to preemption, want the 2 that free one worker", q.Preemptions)
	}
}

// The issue's own layout, end to end: one app of default with no fixed
// size holds all 8 cores in two 4-core executors; etl, guaranteed 3
// cores, asks for 3 one-core executors. It waited for ever ("no queue
// above its fair share has any to give back"); now one 4-core executor is
// taken, etl runs its 3, and default's app takes the core left (two
// executors' worth on the worker it kept, one on the other).
func TestQueuesGuaranteeAgainstWholeWorkerExecutors(t *testing.T) {
	t.Parallel()
	const delay, grace = 2 * time.Second, time.Second
	cl := startCluster(t, clusterSpec{flags: queuesFlags(delay, grace), workers: []string{"w1", "w2"}, cores: 4, memory: "2g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"etl": {Guarantee: &wire.Amount{Cores: 3}}})
	dir := t.TempDir()
	whole := cl.termApp("whole", wire.DefaultQueue, 0, dir, true)
	whole.CoresPerExecutor = 0
	wid := cl.registerApp(t, whole)
	cl.runningApp(wid, 2, 20*time.Second)
	eid := cl.registerApp(t, cl.termApp("etl", "etl", 3, dir, true))
	cl.runningApp(eid, 3, delay+grace+20*time.Second)
	cl.statusWhen(20*time.Second, "default's app on the 5 cores etl leaves", func(st wire.ClusterStatus) error {
		if a, _ := appStatus(st, wid); a.CoresGranted != 5 {
			return fmt.Errorf("default's app holds %d cores", a.CoresGranted)
		}
		return nil
	})
	qs, err := cl.c.Queues(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := queueIn(qs, wire.DefaultQueue); q.Preemptions != 1 {
		t.Errorf("default lost %d executors to preemption, want the one 4-core executor", q.Preemptions)
	}
}

// Idle cores beside a waiting app, end to end: etl holds 3 cores of two
// 4-core workers; an app of default with no fixed size, at most 4 cores,
// takes 4 across both; etl's app of 2-core executors cannot use the core
// left; a second app of default, --max-cores 1, waited beside it saying
// it waited for its fair share. It takes the core, and says nothing.
func TestQueuesNoIdleCoreBesideAnAppOfNoFixedSize(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{flags: queuesFlags(time.Hour, time.Second), workers: []string{"w1", "w2"}, cores: 4, memory: "2g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"etl": {Guarantee: &wire.Amount{Cores: 3}}})
	dir := t.TempDir()
	cl.runningApp(cl.registerApp(t, cl.termApp("etl", "etl", 3, dir, true)), 3, 20*time.Second)
	four := cl.termApp("four", wire.DefaultQueue, 4, dir, true)
	four.CoresPerExecutor = 0
	fid := cl.registerApp(t, four)
	if a, _ := appStatus(cl.runningApp(fid, 2, 20*time.Second), fid); a.CoresGranted != 4 {
		t.Fatalf("default's app of at most 4 cores holds %d, want 4 across both workers (one core left)", a.CoresGranted)
	}
	pairs := cl.termApp("pairs", "etl", 0, dir, true)
	pairs.CoresPerExecutor = 2
	cl.registerApp(t, pairs)
	one := cl.termApp("one", wire.DefaultQueue, 1, dir, true)
	one.CoresPerExecutor = 0
	oid := cl.registerApp(t, one)
	st := cl.runningApp(oid, 1, 20*time.Second)
	if a, _ := appStatus(st, oid); a.Waiting != "" || a.CoresGranted != 1 {
		t.Errorf("the app of --max-cores 1: %d cores, waiting %q; want the free core and no reason", a.CoresGranted, a.Waiting)
	}
}
