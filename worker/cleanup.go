package worker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Work directory cleanup (Spark's spark.worker.cleanup.*, on by default as
// Nomad's garbage collection is). The directory of an app or a driver is
// removed once nothing of it runs here and nothing in it has changed for
// the TTL: the logs of finished work stay readable that long, and the disk
// does not fill up with them.

// trashPrefix marks a directory taken out of use and being removed. No app
// or driver id starts with '.', so it cannot collide with one.
const trashPrefix = ".trash-"

// cleanupLoop sweeps the work directory at start and then every interval.
func (w *Worker) cleanupLoop(ctx context.Context) {
	if w.cfg.CleanupTTL < 0 {
		return
	}
	t := time.NewTicker(w.cfg.CleanupInterval)
	defer t.Stop()
	for {
		w.metrics.sweeps.Inc()
		w.metrics.removed.Add(float64(len(w.cleanWorkDir(time.Now()))))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cleanWorkDir removes what is stale under the work directory at now, and
// returns the directories it removed (relative to the work directory).
func (w *Worker) cleanWorkDir(now time.Time) []string {
	var removed []string
	cutoff := now.Add(-w.cfg.CleanupTTL)
	root := w.cfg.WorkDir
	entries, err := os.ReadDir(root)
	if err != nil {
		w.log.Warn("work directory cleanup: cannot list the work directory", "err", err)
		return nil
	}
	candidates := map[string]func() bool{} // relative path → is something of it live
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, trashPrefix):
			w.removeTrash(filepath.Join(root, name)) // left by an interrupted sweep
		case !e.IsDir() || checkID("id", name) != nil:
			// Not ours (a file an operator left, say): leave it.
		case name == driversDir:
			drivers, err := os.ReadDir(filepath.Join(root, driversDir))
			if err != nil {
				w.log.Warn("work directory cleanup: cannot list the drivers", "err", err)
				continue
			}
			for _, d := range drivers {
				if id := d.Name(); d.IsDir() && checkID("id", id) == nil {
					candidates[filepath.Join(driversDir, id)] = func() bool { return w.procs.driverLiveLocked(id) }
				}
			}
		default:
			candidates[name] = func() bool { return w.procs.appLiveLocked(name) }
		}
	}
	for rel, live := range candidates {
		dir := filepath.Join(root, rel)
		newest, err := w.newestChange(strings.Split(rel, string(filepath.Separator)))
		if err != nil || newest.After(cutoff) {
			continue
		}
		trash, ok := w.takeOutOfUse(dir, live, now)
		if !ok {
			continue
		}
		w.removeTrash(trash)
		removed = append(removed, rel)
		w.log.Info("removed a stale work directory", "dir", rel, "lastChange", newest.Format(time.RFC3339), "ttl", w.cfg.CleanupTTL)
	}
	return removed
}

// takeOutOfUse renames dir out of the way unless live says something of it
// runs. Both happen under the process table's lock, which launches take
// too: a launch either comes first (and the directory stays) or finds no
// directory and creates a fresh one.
func (w *Worker) takeOutOfUse(dir string, live func() bool, now time.Time) (string, bool) {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	if live() {
		return "", false
	}
	trash := filepath.Join(w.cfg.WorkDir, trashPrefix+filepath.Base(dir)+"-"+strconv.FormatInt(now.UnixNano(), 36))
	if err := os.Rename(dir, trash); err != nil {
		w.log.Warn("work directory cleanup: cannot move a stale directory aside", "dir", dir, "err", err)
		return "", false
	}
	return trash, true
}

func (w *Worker) removeTrash(path string) {
	if err := os.RemoveAll(path); err != nil {
		w.log.Warn("work directory cleanup: cannot remove", "path", path, "err", err)
	}
}

// maxCleanupDepth bounds how deep newestChange looks (a descriptor per
// level): what a tenant nests deeper does not keep its directory.
const maxCleanupDepth = 64

// newestChange is the latest modification time of the directory rel (its
// names under the work directory) or anything in it. It walks through
// descriptors and never follows a link: a tenant's home may hold any.
func (w *Worker) newestChange(rel []string) (time.Time, error) {
	root, err := openRootDir(w.cfg.WorkDir)
	if err != nil {
		return time.Time{}, err
	}
	defer root.Close()
	d, err := root.walk(false, 0, rel...)
	if err != nil {
		return time.Time{}, err
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		return time.Time{}, err
	}
	return newestBelow(d, mtime(&st), maxCleanupDepth), nil
}

// newestBelow is the latest of newest and the modification times of what
// d holds, depth levels down.
func newestBelow(d *dirHandle, newest time.Time, depth int) time.Time {
	for _, name := range dirNames(d) {
		var st unix.Stat_t
		if unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // removed while we walked
		}
		if t := mtime(&st); t.After(newest) {
			newest = t
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || depth <= 1 {
			continue
		}
		if sub, err := d.sub(name, false, 0); err == nil {
			newest = newestBelow(sub, newest, depth-1)
			sub.Close()
		}
	}
	return newest
}

func mtime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()) }

// appLiveLocked reports whether an executor of app runs (or is about to).
// The caller holds t.mu.
func (t *procTable) appLiveLocked(appID string) bool {
	for k, p := range t.executors {
		if k.appID == appID && !p.ended {
			return true
		}
	}
	return false
}

// driverLiveLocked reports whether driver id runs (or is about to). The
// caller holds t.mu.
func (t *procTable) driverLiveLocked(id string) bool {
	p := t.drivers[id]
	return p != nil && !p.ended
}
