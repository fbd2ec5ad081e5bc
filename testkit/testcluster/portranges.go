package testcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// portRange is a --port-range of its own for each worker a test starts:
// the workers of a test share one machine, and two processes given the
// same port by their two workers could not both bind it. 100 ports each,
// from 22000 up to below the kernel's ephemeral ports (32768: the test's
// own connections take those); below 22000 are the blocks of the default
// range that the first two slots of a host take (20000-21999), which
// workers of WorkerSpec.DefaultPortRange hand out. Tests of several
// packages run at once, so a range is the machine's, not the process's:
// it is taken by holding a lock on its file in a directory every test
// process of this user shares (an flock the kernel drops if the process
// dies), from a place of this process's own, and given back at h's
// cleanup (after the worker's kill, registered later). Workers that share a --host-dir refuse to start on a
// range over another's, and those of --run-as dynamic share the
// machine's (sharedHostDir).
func portRange(h Host) (string, error) {
	const first, size, slots = 22000, 100, 107
	dir := filepath.Join(os.TempDir(), "berth-test-port-ranges-"+strconv.Itoa(os.Geteuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("port ranges: %w", err)
	}
	rangeMu.Lock()
	defer rangeMu.Unlock()
	if nextRange == 0 {
		nextRange = os.Getpid()%slots + 1
	}
	for range slots {
		k := nextRange % slots
		nextRange++
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(k)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return "", fmt.Errorf("port ranges: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
			f.Close() // another live worker's range, or this process's
			continue
		} else if err != nil {
			f.Close()
			return "", fmt.Errorf("port ranges: locking %s: %w", f.Name(), err)
		}
		h.Cleanup(func() { f.Close() })
		base := first + k*size
		return fmt.Sprintf("%d-%d", base, base+size-1), nil
	}
	return "", fmt.Errorf("port ranges: all %d of %s are held", slots, dir)
}

var (
	rangeMu   sync.Mutex
	nextRange int
)
