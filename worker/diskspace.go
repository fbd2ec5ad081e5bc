package worker

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// diskFull says why the work directory is short of space for new
// processes' logs and files, or "" while it is not: checked at each
// heartbeat (a statfs is a few microseconds), so that the master stops
// placing work here within a heartbeat and resumes as soon as space
// returns. What runs here already is left alone (its output is dropped
// while it cannot be written: keepDraining).
func (w *Worker) diskFull() string {
	if w.cfg.MinFreeDiskMB < 0 {
		return ""
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(w.cfg.WorkDir, &st); err != nil {
		return fmt.Sprintf("work dir %s: cannot tell its free space: %v", w.cfg.WorkDir, err)
	}
	freeMB := int64(st.Bavail) * int64(st.Bsize) >> 20
	if freeMB >= int64(w.cfg.MinFreeDiskMB) {
		return ""
	}
	return fmt.Sprintf("work dir %s: %d MiB free, below --min-free-disk %d MiB", w.cfg.WorkDir, freeMB, w.cfg.MinFreeDiskMB)
}

// noteDisk logs a change of the disk's state and passes it on.
func (w *Worker) noteDisk(full string) string {
	if prev := w.lastDiskFull.Swap(&full); prev == nil || (*prev == "") != (full == "") {
		if full != "" {
			w.log.Warn("disk full: the master places nothing new here until space returns", "why", full)
		} else if prev != nil {
			w.log.Info("disk space back: the master may place work here again")
		}
	}
	return full
}

// diskCheckEvery is how often the worker looks at its disk between
// heartbeats: a change is heartbeated at once, so the master stops (or
// resumes) placing work here within about this long, not a heartbeat
// interval (15 s with Spark's 60 s timeout) later.
const diskCheckEvery = time.Second

func (w *Worker) diskWatchLoop(ctx context.Context) {
	t := time.NewTicker(diskCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		said := "" // before the first heartbeat the master takes the disk for fine
		if prev := w.lastDiskFull.Load(); prev != nil {
			said = *prev
		}
		// Fullness, not its text, changes: while full, the free MiB the
		// text quotes moves with every write, and is no news.
		if (said == "") != (w.diskFull() == "") {
			select {
			case w.beatNow <- struct{}{}:
			default: // one is asked for already
			}
		}
	}
}
