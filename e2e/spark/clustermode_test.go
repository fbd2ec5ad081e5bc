package spark

// Spark's cluster mode on berth: the driver itself runs in the cluster, as
// a berth driver (`berth submit --supervise -- spark-submit ...`), with its
// own credential (BERTH_TOKEN) and the cluster's CA from its worker.

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// driverLog is a driver's stdout or stderr, whole, through berth.
func (cl *sparkCluster) driverLog(t *testing.T, id, stream string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := cl.c.DriverLogs(ctx, id, stream, 0)
	if err != nil {
		return ""
	}
	defer rc.Close()
	data, _ := io.ReadAll(rc)
	return string(data)
}

// driverWhen waits until cond holds for the driver's status.
func (cl *sparkCluster) driverWhen(t *testing.T, id string, within time.Duration, what string, cond func(wire.DriverStatus) error) wire.DriverStatus {
	t.Helper()
	var d wire.DriverStatus
	testproc.Eventually(t, within, what, func() error {
		ctx, cancel := callCtx()
		defer cancel()
		var err error
		if d, err = cl.c.Driver(ctx, id); err != nil {
			return err
		}
		if err := cond(d); err != nil {
			return fmt.Errorf("driver %s %s on %q (%s): %w", id, d.State, d.WorkerID, d.Message, err)
		}
		return nil
	})
	return d
}

// The tenant submits the job's spark-submit as a supervised driver. Once
// its job runs, the driver's worker is killed with SIGKILL (the driver and
// what ran there die with it); berth relaunches the driver on another
// worker under a new id, which runs the job again, to the right answer,
// as a new app.
func TestSparkClusterModeDriverRelaunched(t *testing.T) {
	t.Parallel()
	slots(t, 1)
	cl := startCluster(t, clusterSpec{workers: []testcluster.WorkerSpec{
		worker("w1", 2, "3g"), worker("w2", 2, "3g"), worker("w3", 2, "3g")}})
	run := newRun(t, "cluster-mode") // its marker, for the JVMs berth starts
	submit := append([]string{"submit", "--supervise", "--cores", "1", "--memory", "1g", "--queue", "etl", "--",
		filepath.Join(sparkHome, "bin", "spark-submit")}, cl.submitArgs(run.marker, nil, shortJob()...)...)
	out, err := cl.berthCLI(cl.token, submit...)
	first := regexp.MustCompile(`driver-\S+`).FindString(out)
	if err != nil || first == "" {
		t.Fatalf("berth submit: %v\n%s", err, out)
	}
	d := cl.driverWhen(t, first, time.Minute, "the driver RUNNING", func(d wire.DriverStatus) error {
		if d.State != wire.DriverRunning {
			return errState(d.State)
		}
		return nil
	})
	var firstApp string
	testproc.Eventually(t, 2*time.Minute, "the first driver's job under way", func() error {
		log := cl.driverLog(t, first, "stderr")
		if m := registeredRe.FindStringSubmatch(log); m != nil && len(stageTasksDone(0).FindAllString(log, -1)) >= 2 {
			firstApp = m[1]
			return nil
		}
		return fmt.Errorf("its stderr ends %q", tail(log, 300))
	})
	t.Logf("driver %s's job runs on app %s; kill -9 its worker %s", first, firstApp, d.WorkerID)
	if err := cl.WorkerByID(d.WorkerID).Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	d = cl.driverWhen(t, first, 30*time.Second, "the driver relaunched", func(d wire.DriverStatus) error {
		if d.RelaunchedAs == "" {
			return fmt.Errorf("not relaunched")
		}
		return nil
	})
	t.Logf("relaunched as %s", d.RelaunchedAs)
	second := cl.driverWhen(t, d.RelaunchedAs, 3*time.Minute, "the relaunched driver FINISHED", func(d wire.DriverStatus) error {
		if d.State.Finished() {
			return nil
		}
		return errState(d.State)
	})
	stdout, stderr := cl.driverLog(t, second.ID, "stdout"), cl.driverLog(t, second.ID, "stderr")
	if second.State != wire.DriverFinished || second.WorkerID == d.WorkerID || !regexp.MustCompile(regexp.QuoteMeta(shortJobOK)).MatchString(stdout) {
		t.Fatalf("the relaunched driver %s: %s on %s (the killed worker: %s), exit code %s; its stdout:\n%s\nits stderr ends:\n%s",
			second.ID, second.State, second.WorkerID, d.WorkerID, code(second.ExitCode), stdout, tail(stderr, 4000))
	}
	m := registeredRe.FindStringSubmatch(stderr)
	if m == nil || m[1] == firstApp {
		t.Fatalf("the relaunched driver's app: %v (the first's: %s)", m, firstApp)
	}
	agree(t, stderr, cl.finished(t, m[1]))
	a := cl.appWhen(t, firstApp, 30*time.Second, "the first driver's app ended", func(a wire.AppStatus) error {
		if !a.State.Finished() {
			return errState(a.State)
		}
		return nil
	})
	if a.Tenant != "acme" || a.Queue != "etl" {
		t.Errorf("the first driver's app: tenant %q, queue %q; want the driver's tenant acme, etl", a.Tenant, a.Queue)
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
