package testcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The machine's shared host directory (sharedHostDir) outlives the test
// processes: a slot whose worker is gone is given again only once its
// work directory is gone too, and a test binary killed before its
// cleanups (its -timeout, ^C) leaves its t.TempDir work directories, so
// its slots would stay taken until every one of the 64 was. Once per
// process and directory, the harness frees the slots that no worker holds
// and whose work directory, in the temporary directory, is older than any
// test run (staleSlotAge): it clears the record's work directory, keeping
// the rest (the slot's next identity: a range never starts over).

// staleSlotAge is past the longest -timeout the project's tests run with.
const staleSlotAge = 2 * time.Hour

var freedHostDirs sync.Map // dir → *sync.Once

func freeStaleSlots(dir string) error {
	once, _ := freedHostDirs.LoadOrStore(dir, &sync.Once{})
	var err error
	once.(*sync.Once).Do(func() { err = freeStaleSlotsNow(dir, time.Now()) })
	return err
}

func freeStaleSlotsNow(dir string, now time.Time) error {
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no worker has used it yet
	}
	if err != nil {
		return fmt.Errorf("freeing stale slots of %s: %w", dir, err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil { // as the workers take it
		return fmt.Errorf("freeing stale slots of %s: %w", dir, err)
	}
	slots, _ := filepath.Glob(filepath.Join(dir, "slot-*"))
	for _, path := range slots {
		if err := freeIfStale(path, now); err != nil {
			return err
		}
	}
	return nil
}

func freeIfStale(path string, now time.Time) error {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("freeing stale slot %s: %w", path, err)
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		return nil // a live worker's
	case err != nil:
		return fmt.Errorf("freeing stale slot %s: %w", path, err)
	}
	var buf [4096]byte
	n, _ := f.ReadAt(buf[:], 0)
	var rec map[string]any
	if n == 0 || json.NewDecoder(bytes.NewReader(buf[:n])).Decode(&rec) != nil {
		return nil // free already, or torn: the worker reads it as free
	}
	work, _ := rec["workDir"].(string)
	st, err := os.Stat(work)
	if work == "" || err != nil || !strings.HasPrefix(work, os.TempDir()+string(filepath.Separator)) || now.Sub(st.ModTime()) < staleSlotAge {
		return nil
	}
	rec["workDir"] = ""
	data, _ := json.Marshal(rec)
	data = append(data, '\n')
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("freeing stale slot %s: %w", path, err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return fmt.Errorf("freeing stale slot %s: %w", path, err)
	}
	return f.Sync()
}

// sharedHostDir is the --host-dir of every worker of this machine's tests
// that runs with --run-as dynamic: those serve the names of their
// identities in the machine's /run/systemd/userdb, so they are one host's
// workers whatever their cluster, and a worker refuses to start where
// another of its slot number serves there from another --host-dir (the
// two would hand one uid to two tenants).
func sharedHostDir(uid uint32) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("berth-test-host-%d", uid))
}

// runsAsDynamic reports whether flags give --run-as dynamic.
func runsAsDynamic(flags []string) bool {
	for i, f := range flags {
		if f == "--run-as=dynamic" || (f == "--run-as" && i+1 < len(flags) && flags[i+1] == "dynamic") {
			return true
		}
	}
	return false
}
