package e2e

// A worker whose process dies on a live host is lost at once, as Spark's
// Master drops a Worker whose connection closes: the kernel closes the
// dead worker's heartbeat connection, the leader probes the worker's
// address, finds it refused twice, and removes the worker, long before
// --worker-timeout. A frozen worker keeps its connection open and is
// judged by the timeout alone, as before (master/worker_probe.go).

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// A worker killed with SIGKILL while it runs an app's executor, with a
// 30 s --worker-timeout: the executor is LOST, saying why, and replaced on
// the other worker within seconds.
func TestAKilledWorkerIsLostAtOnceNotAtItsTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 30 * time.Second
	cl := startCluster(t, clusterSpec{masters: 1, cores: 1, memory: "1g", workers: []string{"w1"},
		flags: []string{"--worker-timeout", timeout.String()}})
	app, events, _ := cl.runLongApp("gone", 1)
	if err := onWorker(cl.mustStatus(), app, "w1", 1); err != nil {
		t.Fatal(err)
	}
	cl.addWorker("w2", 1, "1g")
	st := cl.waitWorkers(20*time.Second, "w1", "w2")
	// Killed once it has heartbeat (a quarter of the timeout after it
	// registered): the connection that closes is the one its heartbeats
	// ride on, not only its registration's.
	w, _ := workerIn(st, "w1")
	cl.statusWhen(timeout/4+5*time.Second, "a heartbeat of w1", func(st wire.ClusterStatus) error {
		if now, _ := workerIn(st, "w1"); !now.LastHeartbeat.After(w.LastHeartbeat) {
			return fmt.Errorf("last heartbeat %s", now.LastHeartbeat)
		}
		return nil
	})

	killed := time.Now()
	cl.worker("w1").Kill()
	const within = 8 * time.Second // well under the timeout; it takes about half a second
	cl.statusWhen(within, "w1 DEAD and the executor replaced on w2", func(st wire.ClusterStatus) error {
		if err := workerStateIs(st, "w1", wire.WorkerDead); err != nil {
			return err
		}
		return onWorker(st, app, "w2", 1)
	})
	took := time.Since(killed)
	t.Logf("w1 DEAD and its executor RUNNING on w2 %s after kill -9 (worker timeout %s)", took.Round(time.Millisecond), timeout)

	a, _ := appStatus(cl.mustStatus(), app)
	var lost []wire.ExecutorStatus
	for _, e := range a.Executors {
		if e.WorkerID == "w1" {
			lost = append(lost, e)
		}
	}
	why := "worker lost: worker w1's process is gone (its connection closed and nothing listens at "
	if len(lost) != 1 || lost[0].State != wire.ExecutorLost || !strings.HasPrefix(lost[0].Message, why) {
		t.Errorf("w1's executors %+v, want one LOST with a message starting %q", lost, why)
	}
	events.waitFor(t, 5*time.Second, "the app told why its executor was lost", func(evs []appEvent) error {
		for _, ev := range evs {
			if ev.Type == wire.EventExecutorLost && strings.HasPrefix(ev.Message, why) {
				return nil
			}
		}
		return fmt.Errorf("no executorLost saying %q; events: %s", why, eventTypes(evs))
	})
}

// A worker frozen with SIGSTOP keeps its connections open: it is still
// ALIVE seconds into the freeze, well past the probes' half second, and
// DEAD only at its --worker-timeout; on SIGCONT it is back.
func TestAFrozenWorkerIsLostOnlyAtItsTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 8 * time.Second
	cl := startCluster(t, clusterSpec{masters: 1, cores: 1, memory: "1g", workers: []string{"w1"},
		flags: []string{"--worker-timeout", timeout.String()}})
	w1 := cl.worker("w1")

	frozen := time.Now()
	signal(t, w1.Proc, syscall.SIGSTOP)
	t.Cleanup(func() { _ = w1.Proc.Signal(syscall.SIGCONT) })
	// Its last heartbeat came at most a quarter of the timeout before the
	// freeze: until then, it must be ALIVE at every look.
	alive := timeout - timeout/4 - 500*time.Millisecond
	looks := 0
	for time.Since(frozen) < alive {
		st, err := cl.status()
		if err != nil {
			t.Fatal(err)
		}
		if err := workerStateIs(st, "w1", wire.WorkerAlive); err != nil && time.Since(frozen) < alive {
			t.Fatalf("%s into the freeze (timeout %s): %v, want ALIVE", time.Since(frozen).Round(time.Millisecond), timeout, err)
		}
		looks++
		time.Sleep(100 * time.Millisecond) // the pace of the looks, not a wait for something
	}
	cl.statusWhen(timeout, "w1 DEAD at its timeout", func(st wire.ClusterStatus) error { return workerStateIs(st, "w1", wire.WorkerDead) })
	t.Logf("frozen w1 ALIVE at %d looks over %s, DEAD %s into the freeze (timeout %s)", looks, alive, time.Since(frozen).Round(time.Millisecond), timeout)

	signal(t, w1.Proc, syscall.SIGCONT)
	testproc.Eventually(t, 10*time.Second, "w1 ALIVE again after SIGCONT", func() error {
		st, err := cl.status()
		if err != nil {
			return err
		}
		return workerStateIs(st, "w1", wire.WorkerAlive)
	})
}
