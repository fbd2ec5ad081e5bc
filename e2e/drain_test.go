package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// berthCLI runs bin/berth against the cluster's masters with the operator's
// credentials and returns its output and exit error.
func (cl *cluster) berthCLI(args ...string) (string, error) {
	full := append([]string{"--master", strings.Join(cl.URLs(), ","), "--secret", secret, "--tls-ca-file", bin.PKI.CAFile()}, args...)
	out, err := exec.Command(bin.Berth, full...).CombinedOutput()
	return string(out), err
}

// berth worker drain with a deadline, through the real binaries: the worker
// is DECOMMISSIONING, takes nothing new, and at the deadline its executor
// is killed (its process gone) and replaced on the other worker; once it
// is, undrain brings the worker back.
func TestDrainMovesExecutorsAtItsDeadline(t *testing.T) {
	t.Parallel()
	cl := daemonCluster(t, nil, 2, "w1", "w2")
	appID, stream, st := cl.runLongApp("drained", 2)
	onW1 := ""
	for _, e := range liveExecutors(mustApp(t, st, appID)) {
		if e.WorkerID == "w1" {
			onW1 = execKey(appID, e.ID)
		}
	}
	pids := cl.execPids()
	if onW1 == "" || pids[onW1] == 0 {
		t.Fatalf("no executor of %s on w1 (%s)", appID, describeExecs(mustApp(t, st, appID)))
	}
	out, err := cl.berthCLI("worker", "drain", "w1", "--deadline", "3s")
	if err != nil || !strings.Contains(out, "worker w1 DECOMMISSIONING until") {
		t.Fatalf("berth worker drain: %v\n%s", err, out)
	}
	// Before the deadline: still running there; a new app is not placed there.
	if w, _ := workerIn(cl.mustStatus(), "w1"); w.State != wire.WorkerDecommissioning || w.DrainDeadline == nil {
		t.Errorf("w1 after the drain: %+v", w)
	}
	cl.appWhen(appID, 20*time.Second, "its executor on w1 LOST to the deadline and replaced on w2", func(a wire.AppStatus) error {
		lost, onW2 := false, 0
		for _, e := range a.Executors {
			lost = lost || (e.WorkerID == "w1" && e.State == wire.ExecutorLost && strings.Contains(e.Message, "drain deadline"))
			if e.WorkerID == "w2" && e.State == wire.ExecutorRunning {
				onW2++
			}
		}
		if !lost || onW2 != 2 {
			return fmt.Errorf("executors %s", describeExecs(a))
		}
		return nil
	})
	testproc.Eventually(t, 10*time.Second, "the drained executor's process to be gone", func() error {
		if pid, ok := cl.execPids()[onW1]; ok {
			return fmt.Errorf("pid %d still runs", pid)
		}
		return nil
	})
	if len(stream.of(wire.EventExecutorLost)) == 0 {
		t.Errorf("the app's client was not told: events %s", stream.types())
	}
	// What ran there is replaced: undrain puts the worker back to work (it
	// stayed DECOMMISSIONING for ever, undrain a 409, before).
	if out, err := cl.berthCLI("worker", "undrain", "w1"); err != nil || !strings.Contains(out, "ALIVE") {
		t.Errorf("undrain once what ran on w1 was replaced: %v\n%s", err, out)
	}
	if w, _ := workerIn(cl.mustStatus(), "w1"); w.State != wire.WorkerAlive {
		t.Errorf("w1 after the undrain: %s", w.State)
	}
	if out, err := cl.berthCLI("worker", "drain", "w1", "--deadline", "0s"); err == nil || !strings.Contains(out, "--deadline") {
		t.Errorf("a zero deadline: %v\n%s", err, out)
	}
}
