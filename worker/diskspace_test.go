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
