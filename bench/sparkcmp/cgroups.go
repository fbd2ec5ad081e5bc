package sparkcmp

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// removeWorkerCgroups removes the cgroups a berth worker made for its
// executors (berth-<id>-<pid>, where it runs: under this process's own
// groups, which it inherited), once the worker and everything below it
// are gone. A worker's guardian removes them when the worker dies, but a
// measure that kills the whole tree, as a machine's loss would, kills the
// guardian too; on a real machine a reboot clears them. Only empty groups
// can be removed, so a group still in use stays.
func removeWorkerCgroups(id string, pid int) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return
	}
	defer f.Close()
	name := "berth-" + id + "-" + strconv.Itoa(pid)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || strings.Contains(parts[1], "=") {
			continue // a named hierarchy (name=systemd): no controller, no groups of berth's
		}
		base := "/sys/fs/cgroup"
		if parts[1] != "" {
			base = filepath.Join(base, strings.Split(parts[1], ",")[0])
		}
		removeGroupTree(filepath.Join(base, parts[2], name))
	}
}

// removeGroupTree removes a cgroup's children, deepest first, then it.
func removeGroupTree(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeGroupTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir)
}
