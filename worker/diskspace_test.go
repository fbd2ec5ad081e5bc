package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// Below --min-free-disk the heartbeats say the disk is full, with the
// figures; with it off (negative), never.
func TestHeartbeatsSayTheDiskIsFull(t *testing.T) {
	fm, _ := startParallel(t, func(c *Config) { c.MinFreeDiskMB = 1 << 30 }) // a PiB free: no disk here has it
	testproc.Eventually(t, 5*time.Second, "a heartbeat saying the disk is full", func() bool {
		var full string
		fm.with(func() { full = fm.lastBeat.DiskFull })
		return strings.Contains(full, "MiB free, below --min-free-disk 1073741824 MiB")
	})
	w := &Worker{cfg: Config{WorkDir: t.TempDir(), MinFreeDiskMB: -1}}
	if got := w.diskFull(); got != "" {
		t.Errorf("with --min-free-disk 0 the worker says %q", got)
	}
	w.cfg.MinFreeDiskMB = 1
	if got := w.diskFull(); got != "" {
		t.Errorf("with a MiB asked and more free, the worker says %q", got)
	}
}

// A launch while the work dir is short of space is refused (507
// disk_full, saying why) rather than started to fail: nothing of it is
// listed or made on disk, and the master places it elsewhere.
func TestLaunchRefusedWhileTheDiskIsFull(t *testing.T) {
	_, tw := startParallel(t, func(c *Config) { c.MinFreeDiskMB = 1 << 30 })
	for _, c := range []struct {
		path string
		body any
	}{
		{"/v1/executors", launchOf("app-1", 0, []string{"/bin/true"}, nil)},
		{"/v1/drivers", driverLaunchOf("driver-1", false, []string{"/bin/true"})},
	} {
		code, body := tw.call("POST", c.path, c.body)
		if code != 507 || !strings.Contains(body, `"disk_full"`) || !strings.Contains(body, "not started: work dir") {
			t.Errorf("POST %s with the disk full: %d %s, want 507 disk_full saying why", c.path, code, body)
		}
	}
	st := tw.state()
	if len(st.Executors) != 0 || len(st.Drivers) != 0 {
		t.Errorf("the worker lists %d executors and %d drivers after refusing their launches", len(st.Executors), len(st.Drivers))
	}
}
