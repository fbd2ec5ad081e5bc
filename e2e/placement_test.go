package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// addLabelledWorker starts a worker with --label flags and waits until the
// master lists it ALIVE.
func (cl *cluster) addLabelledWorker(id string, cores int, labels ...string) {
	cl.t.Helper()
	spec := workerSpec(id, cores, "1g")
	for _, l := range labels {
		spec.Flags = append(spec.Flags, "--label", l)
	}
	if _, err := cl.AddWorker(spec); err != nil {
		cl.t.Fatal(err)
	}
	testproc.Eventually(cl.t, 30*time.Second, id+" ALIVE", func() bool {
		w, ok := workerIn(cl.mustStatus(), id)
		return ok && w.State == wire.WorkerAlive
	})
}

// Constraints and gangs with the real daemons: workers' --labels in
// status; an app constrained to T4 runs only there and says why it waits
// for more; a gang of 3 that the P100 workers cannot hold whole starts
// nothing, and all of it starts once a third P100 worker joins.
func TestConstraintsAndGangs(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, cores: 1, memory: "1g"})
	cl.addLabelledWorker("w-t4", 1, "gpu-model=T4", "zone=a")
	cl.addLabelledWorker("w-p100a", 1, "gpu-model=P100")
	cl.addLabelledWorker("w-p100b", 1, "gpu-model=P100")

	out, err := cl.berthCLI("status")
	if err != nil || !strings.Contains(out, "LABELS") || !strings.Contains(out, "gpu-model=T4,zone=a") {
		t.Errorf("berth status does not show the labels: %v\n%s", err, out)
	}

	sleeper := []string{"/bin/sh", "-c", "sleep 3600"}
	t4, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{
		Name:                "on-t4",
		Command:             sleeper,
		MaxCores:            3,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
		ProcessSpec:         wire.ProcessSpec{Constraints: []wire.Constraint{{Label: "gpu-model", In: []string{"T4"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, t4)
	cl.appWhen(t4, 30*time.Second, "one executor, on w-t4, and a reason for the rest", func(a wire.AppStatus) error {
		if len(a.Executors) != 1 || a.Executors[0].WorkerID != "w-t4" || !strings.Contains(a.Waiting, "no worker with gpu-model in [T4]") {
			return fmt.Errorf("executors %s, waiting %q", describeExecs(a), a.Waiting)
		}
		return nil
	})

	gang, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{
		Name:                "gang",
		Command:             sleeper,
		MaxCores:            3,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
		Gang:                3,
		ProcessSpec:         wire.ProcessSpec{Constraints: []wire.Constraint{{Label: "gpu-model", In: []string{"P100"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, gang)
	// Two P100 workers would hold two members: none may have started, the
	// rounds since it registered having said why.
	cl.appWhen(gang, 30*time.Second, "the gang waiting whole, nothing started", func(a wire.AppStatus) error {
		if !strings.Contains(a.Waiting, "gang of 3") || len(a.Executors) != 0 {
			return fmt.Errorf("waiting %q, executors %s", a.Waiting, describeExecs(a))
		}
		return nil
	})
	cl.addLabelledWorker("w-p100c", 1, "gpu-model=P100")
	cl.appWhen(gang, 30*time.Second, "the whole gang RUNNING on the P100 workers", func(a wire.AppStatus) error {
		on := map[string]bool{}
		for _, e := range a.Executors {
			if e.State == wire.ExecutorRunning && strings.HasPrefix(e.WorkerID, "w-p100") {
				on[e.WorkerID] = true
			}
		}
		if len(on) != 3 {
			return fmt.Errorf("executors %s", describeExecs(a))
		}
		return nil
	})
}
