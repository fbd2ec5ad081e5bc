package worker

import (
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// SIGTERM with --drain-deadline drains first: the worker asks the master to
// drain it, keeps heartbeating, and lets its executor run until the
// deadline has passed; only then does it kill what is left and stop.
func TestStopWithDrainDeadlineDrainsFirst(t *testing.T) {
	fm, tw := startParallel(t, func(c *Config) { c.DrainDeadline = time.Second })
	pid := tw.runSleeper("app-d", 0)
	start := time.Now()
	stopped := make(chan struct{})
	go func() { tw.stop(); close(stopped) }()
	testproc.Eventually(t, 5*time.Second, "the drain asked of the master", func() bool { return fm.count("drain") == 1 })
	beats := fm.count("heartbeat")
	if !testproc.Alive(pid) {
		t.Fatal("the executor was killed before the drain deadline")
	}
	testproc.Eventually(t, 10*time.Second, "the executor killed after the deadline", func() bool { return !testproc.Alive(pid) })
	if took := time.Since(start); took < time.Second {
		t.Errorf("the executor was killed %v after SIGTERM, before the 1s deadline", took)
	}
	testproc.Receive(t, stopped, 15*time.Second, "the worker to stop")
	fm.with(func() {
		if fm.drains[0].DeadlineSeconds != 1 {
			t.Errorf("drain asked with %+v, want 1 s", fm.drains[0])
		}
	})
	if fm.count("heartbeat") <= beats {
		t.Error("no heartbeat while draining: the master would take the worker for dead")
	}
}
