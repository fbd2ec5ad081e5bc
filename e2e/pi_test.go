package e2e

// The example job, examples/pi, run as a user runs it: submitted as a
// driver in cluster mode, with a worker killed under it.

import (
	"context"
	"fmt"
	"io"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The pi job of the test: enough work (some 2e9 samples, a few seconds on
// two cores) that a worker can be killed while it runs.
const (
	piTasks   = 200
	piSamples = 10_000_000
)

func piArgs() []string {
	return []string{piBin, "--tasks", strconv.Itoa(piTasks), "--samples", strconv.Itoa(piSamples),
		"--executor-memory", "64m", "--log-level", "debug"}
}

// piTaskDone matches the driver's debug line about a task result, giving
// the executor.
var piTaskDone = regexp.MustCompile(`msg="task done" task=\d+ executor=(\d+)`)

// piLine matches the driver's result line.
var piLine = regexp.MustCompile(`(?m)^Pi is roughly ([0-9.]+) \((\d+) samples in (\d+) tasks\)$`)

// TestPiSurvivesWorkerKilledMidJob runs the pi job on three workers and
// kills (SIGKILL) one that runs executors, but not the driver, once tasks
// are being done. The driver must still finish (FINISHED) and print exactly
// the estimate the same job prints without any failure, which is itself
// within 0.01 of Pi: the tasks the lost executors held are re-queued and
// their results counted once.
//
// The failure-free run, the reference, goes through the berth CLI (`berth
// submit --wait`) on a cluster of its own, at the same time. On the way,
// `berth status` must list the live cluster's workers and the job's app.
func TestPiSurvivesWorkerKilledMidJob(t *testing.T) {
	t.Parallel()
	ref := daemonCluster(t, nil, 4, "piref")
	refSubmit := start(t, "berth-submit", bin.Berth,
		append([]string{"--master", ref.master("m1").URL, "submit", "--wait", "--poll", "200ms", "--cores", "1", "--memory", "128m", "--"}, piArgs()...))

	cl := daemonCluster(t, nil, 4, "pi1", "pi2", "pi3")
	driverID, err := cl.c.SubmitDriver(callCtx(t, 20*time.Second), wire.DriverDescription{Command: piArgs(), Cores: 1, MemoryMB: 128})
	if err != nil {
		t.Fatal(err)
	}
	drv := cl.driverWhen(driverID, 20*time.Second, "pi driver RUNNING", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRunning || d.WorkerID == "" {
			return fmt.Errorf("want RUNNING on a worker")
		}
		return nil
	})

	// The app's executors run, some on workers other than the driver's.
	var app wire.AppStatus
	cl.statusWhen(20*time.Second, "pi app with RUNNING executors away from the driver", func(st wire.ClusterStatus) error {
		if len(st.ActiveApps) != 1 {
			return fmt.Errorf("%d active apps, want the pi app", len(st.ActiveApps))
		}
		app = st.ActiveApps[0]
		for _, e := range executorsIn(app, wire.ExecutorRunning) {
			if e.WorkerID != drv.WorkerID {
				return nil
			}
		}
		return fmt.Errorf("no RUNNING executor away from the driver's worker %s: %s", drv.WorkerID, describeExecs(app))
	})
	// berth status lists the workers and the app.
	out, err := exec.Command(bin.Berth, "--master", cl.master("m1").URL, "--secret", secret, "--tls-ca-file", bin.PKI.CAFile(), "status").CombinedOutput()
	if err != nil {
		t.Fatalf("berth status: %v\n%s", err, out)
	}
	for _, want := range []string{"pi1", "pi2", "pi3", app.ID, " pi ", "RUNNING", "ALIVE", driverID} {
		if !strings.Contains(string(out), want) {
			t.Errorf("berth status does not show %q:\n%s", want, out)
		}
	}

	// Tasks are being done, some by executors away from the driver's worker:
	// the victim is the worker of one of those (the driver logs every task
	// with --log-level debug). Its executor's four loops each hold a lease
	// but for the moment between reporting a result and leasing the next
	// task; the kill comes a few more tasks later, not right after a result
	// of the victim's, so that it finds leases held.
	execWorker := map[string]string{}
	for _, e := range app.Executors {
		execWorker[strconv.Itoa(e.ID)] = e.WorkerID
	}
	victimID, doneThen := "", 0
	testproc.Eventually(t, 30*time.Second, "pi tasks done away from the driver's worker", func() error {
		logs, err := readAll(cl.c.DriverLogs(callCtx(t, 5*time.Second), driverID, client.Stderr, 0))
		if err != nil {
			return err
		}
		done := piTaskDone.FindAllStringSubmatch(logs, -1)
		if victimID != "" {
			if len(done) < doneThen+5 {
				return fmt.Errorf("%d tasks done, want %d", len(done), doneThen+5)
			}
			return nil
		}
		for _, m := range done {
			if w := execWorker[m[1]]; w != "" && w != drv.WorkerID {
				victimID, doneThen = w, len(done)
				return fmt.Errorf("victim %s chosen at %d tasks done", w, doneThen)
			}
		}
		return fmt.Errorf("%d tasks done, none by an executor on another worker than %s (executors %s)", len(done), drv.WorkerID, describeExecs(app))
	})
	if d, err := cl.c.Driver(callCtx(t, 5*time.Second), driverID); err != nil || d.State != wire.DriverRunning {
		t.Fatalf("driver %s (%v) before the kill: the job must still run; make it longer", d.State, err)
	}
	cl.worker(victimID).Kill()
	killed := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	final, err := cl.c.WaitDriver(ctx, driverID, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if final.ID != driverID || final.State != wire.DriverFinished {
		t.Fatalf("driver ended as %s %s (%s), want %s FINISHED", final.ID, final.State, final.Message, driverID)
	}
	t.Logf("killed worker %s (the driver runs on %s); the job finished %s later", victimID, drv.WorkerID, time.Since(killed).Round(time.Millisecond))
	stdout, err := readAll(cl.c.DriverLogs(callCtx(t, 10*time.Second), driverID, client.Stdout, 0))
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := readAll(cl.c.DriverLogs(callCtx(t, 10*time.Second), driverID, client.Stderr, 0))
	if err != nil {
		t.Fatal(err)
	}
	// The loss did happen to the job: the killed worker's executors were
	// reported lost and the tasks they held went back to the queue.
	if !strings.Contains(stderr, "tasks re-queued") {
		t.Errorf("the driver re-queued no task: the kill did not hit the job; its stderr:\n%s", stderr)
	}
	st := cl.mustStatus()
	if a, ok := appStatus(st, app.ID); !ok || a.State != wire.AppFinished {
		t.Errorf("pi app %s is %s (%s), want FINISHED", app.ID, a.State, a.Message)
	} else if len(executorsIn(a, wire.ExecutorLost)) == 0 {
		t.Errorf("pi app lost no executor: %s", describeExecs(a))
	}

	// The reference run, without failures.
	select {
	case <-refSubmit.Done():
	case <-time.After(120 * time.Second):
		t.Fatal("berth submit --wait of the reference job did not return")
	}
	refOut := refSubmit.LogTail(1 << 20)
	if refSubmit.Err() != nil || !strings.Contains(refOut, "FINISHED") {
		t.Fatalf("berth submit --wait of the reference job: %v\n%s", refSubmit.Err(), refOut)
	}
	refID := regexp.MustCompile(`driver-\S+`).FindString(refOut)
	refStdout, err := readAll(ref.c.DriverLogs(callCtx(t, 10*time.Second), refID, client.Stdout, 0))
	if err != nil {
		t.Fatalf("logs of the reference driver %q: %v", refID, err)
	}

	got, want := piLine.FindStringSubmatch(stdout), piLine.FindStringSubmatch(refStdout)
	if want == nil {
		t.Fatalf("the reference job printed no result: %q", refStdout)
	}
	if got == nil {
		t.Fatalf("the job printed no result: %q", stdout)
	}
	t.Logf("with a worker killed: %q; reference: %q", got[0], want[0])
	if got[0] != want[0] {
		t.Errorf("with a worker killed the job printed %q, without failures %q", got[0], want[0])
	}
	if got[2] != strconv.Itoa(piTasks*piSamples) || got[3] != strconv.Itoa(piTasks) {
		t.Errorf("result %q does not count every sample of every task once", got[0])
	}
	if v, err := strconv.ParseFloat(got[1], 64); err != nil || math.Abs(v-math.Pi) > 0.01 {
		t.Errorf("Pi is roughly %s (%v): more than 0.01 from %f", got[1], err, math.Pi)
	}
}

// readAll reads a log stream through the client.
func readAll(rc io.ReadCloser, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return string(data), err
}
