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
	register := func(desc wire.AppDescription) string {
		t.Helper()
		id, err := cl.c.RegisterApp(callCtx(t, 30*time.Second), desc)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	wholeApp := func(name string, maxCores int) wire.AppDescription {
		d := cl.termApp(name, wire.DefaultQueue, maxCores, dir, true)
		d.CoresPerExecutor = 0
		return d
	}
	capped := register(wholeApp("capped", 4))
	cl.runningApp(capped, 2, 20*time.Second)
	open := register(wholeApp("open", 0))
	cl.runningApp(open, 2, 20*time.Second)
	etlDesc := cl.termApp("etl", "etl", 3, dir, true)
	etlDesc.CoresPerExecutor = 3
	etl := register(etlDesc)
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
