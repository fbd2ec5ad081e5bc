package scheduler

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// wantSays checks that a reason says each of parts (the first missing is
// told).
func wantSays(t *testing.T, what, got string, parts ...string) {
	t.Helper()
	if i := slices.IndexFunc(parts, func(p string) bool { return !strings.Contains(got, p) }); i >= 0 {
		t.Errorf("%s: %q, want it to say %q", what, got, parts[i])
	}
}

// Each reason with its numbers, judged from a view: no worker, a request
// larger than every worker, room taken, the core unit, the executor
// limit, a backoff on the view's clock, an exclusion, recovery.
func TestAppWaitingSaysWhy(t *testing.T) {
	cl := newCluster(t)
	a := cl.app("A", wire.DefaultQueue, 0, 0, 100)
	wantSays(t, "no worker", cl.status(true, Plan{}).AppWaiting(&a.App), "waiting: no worker is alive")

	cl.worker("w1", 2, 4096)
	a.Cores = 64
	wantSays(t, "too large", cl.status(true, Plan{}).AppWaiting(&a.App), "cannot start", "no worker has 64 cores and 100 MB", "largest: 2 cores, 4096 MB")

	a.Cores = 1
	cl.run(cl.app("X", wire.DefaultQueue, 0, 2, 100), "w1")
	cl.run(cl.apps[1], "w1")
	wantSays(t, "room taken", cl.status(true, Plan{}).AppWaiting(&a.App), "waiting: no worker has 1 free cores", "largest free: 0 cores")

	unit := cl.app("U", wire.DefaultQueue, 0, 0, 100)
	unit.Cores = 0
	cl.cfg.MinCoreUnit = 4
	wantSays(t, "core unit", cl.status(true, Plan{}).AppWaiting(&unit.App), "cannot start: the core unit 4 fits on no worker", "--min-core-unit")
	cl.cfg.MinCoreUnit = 0

	a.ExecutorLimit = 0
	wantSays(t, "limit", cl.status(true, Plan{}).AppWaiting(&a.App), "waiting: executor limit reached (0)")
	a.ExecutorLimit = 10

	a.BackoffUntil = t0.Add(1500 * time.Millisecond)
	wantSays(t, "backoff", cl.status(true, Plan{}).AppWaiting(&a.App), "kept ending soon after starting; next try in 1.5s")
	cl.now = t0.Add(time.Second)
	wantSays(t, "backoff, a second later", cl.status(true, Plan{}).AppWaiting(&a.App), "next try in 500ms")
	a.BackoffUntil = time.Time{}

	cl.worker("w2", 2, 4096)
	a.Excluded = map[string]Exclusion{"w2": {Until: t0.Add(time.Hour), Reason: "2 executors failed there"}}
	wantSays(t, "exclusion", cl.status(true, Plan{}).AppWaiting(&a.App), "its executors are kept off worker w2 until 13:00:00 (2 executors failed there; berth worker clear w2 ends it)")

	wantSays(t, "recovering", cl.status(false, Plan{}).AppWaiting(&a.App), "waiting: the master is recovering its workers")
}

// A queue owed its share says what is reclaimed for it; a constrained app
// says which workers it may use.
func TestAppWaitingForItsQueueAndItsWorkers(t *testing.T) {
	cl := batchHoldsAll(t)
	p := cl.schedule()
	wantSays(t, "owed", cl.status(true, p).AppWaiting(&cl.apps[1].App),
		"waiting for fair share (queue etl): cores 4, memory 400 MB from queue batch to be reclaimed in 30s")

	cl = newCluster(t)
	cl.worker("w1", 8, 8192).Labels = map[string]string{"gpu-model": "T4"}
	a := cl.app("A", wire.DefaultQueue, 0, 0, 100)
	a.Constraints = []wire.Constraint{{Label: "gpu-model", In: []string{"A100"}}}
	wantSays(t, "constrained", cl.status(true, Plan{}).AppWaiting(&a.App), "waiting: no live worker with gpu-model in [A100]")
}

// A driver says why it waits: --max-drivers, its queue's limit, its size.
func TestDriverWaitingSaysWhy(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 2, 4096)
	cl.cfg.MaxDrivers = 1
	cl.placed = []Driver{{ID: "d0", Spec: NewDriverSpec(wire.DriverDescription{ProcessSpec: inDefault, Cores: 1, MemoryMB: 100})}}
	d := Driver{ID: "d1", Spec: NewDriverSpec(wire.DriverDescription{ProcessSpec: inDefault, Cores: 1, MemoryMB: 100}), Waiting: true}
	wantSays(t, "max drivers", cl.status(true, Plan{}).DriverWaiting(&d), "waiting: 1 drivers run, the most --max-drivers allows")
	cl.cfg.MaxDrivers = 0
	cl.queues[wire.DefaultQueue].Limit = &wire.Amount{Cores: 1}
	wantSays(t, "queue limit", cl.status(true, Plan{Queues: map[string]QueueOutcome{wire.DefaultQueue: {Usage: wire.Amount{Cores: 1}}}}).DriverWaiting(&d),
		"waiting: queue default at its limit (cores 1, 1 in use): the driver asks 1")
	cl.queues[wire.DefaultQueue].Limit = nil
	d.Cores = 64
	wantSays(t, "too large", cl.status(true, Plan{}).DriverWaiting(&d), "cannot start: no worker has 64 cores")
}

// A driver over its queue's limit in two resources is told of the same one
// at every read (the first by name), not of whichever a map gave first.
func TestDriverOverTwoLimitsSaysOneStably(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 8, 8192)
	cl.queues[wire.DefaultQueue].Limit = &wire.Amount{Resources: wire.ResourceAmounts{"gpu": 1, "fpga": 1}}
	d := Driver{ID: "d1", Waiting: true, Spec: NewDriverSpec(wire.DriverDescription{ProcessSpec: inDefault, Cores: 1, MemoryMB: 100,
		Resources: wire.ResourceAmounts{"gpu": 2, "fpga": 2}})}
	v := cl.status(true, Plan{})
	want := "cannot start: the driver asks 2 fpga, more than queue default's limit (1)"
	for i := range 50 { // map order changes from one range to the next
		if got := v.DriverWaiting(&d); got != want {
			t.Fatalf("read %d: %q, want %q", i, got, want)
		}
	}
}
