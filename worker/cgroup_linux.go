//go:build linux

package worker

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Every executor and driver runs in a cgroup of its own: its memory limit
// is the memory it asked for, its CPU weight is proportional to its cores,
// and its pids are bounded. cgroup v2 when the machine runs it alone
// (/sys/fs/cgroup/cgroup.controllers); else v1's memory, cpu and pids
// controllers, as on these machines. The worker's groups hang under its own
// cgroup, in berth-<worker id>-<pid>: of this process alone, so that two
// workers of one id on a machine (tests; a restart while the old one dies)
// never touch each other's groups. Where none can be made (no permission, no
// controller) the worker says so at start and falls back to process groups:
// the limits are then not enforced.

// cgroups is where the worker makes its processes' groups.
type cgroups struct {
	v2   bool
	base map[string]string // controller ("" for v2) → the worker's parent group
	pids int               // pids.max of each group
}

var v1Controllers = []string{"memory", "cpu", "pids"}

// setupCgroups makes the worker's parent groups, or says why it cannot.
// workerID is an id (checkID, defaultID): fit for a directory name.
// movers are the pids that share the worker's cgroup and move with it
// into a leaf if need be (the worker and its guardian; see setupV2).
func setupCgroups(workerID string, pidsMax int, movers ...int) (*cgroups, error) {
	name := fmt.Sprintf("berth-%s-%d", workerID, os.Getpid())
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	c := &cgroups{base: map[string]string{}, pids: pidsMax}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		c.v2 = true
		dir, err := setupV2(osCgroupFS{}, "/sys/fs/cgroup", own[""], name, movers)
		if err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
		sweepStale(filepath.Dir(dir), name)
		c.base[""] = dir
		c.sweep()
		return c, nil
	}
	for _, ctl := range v1Controllers {
		path, ok := own[ctl]
		if !ok {
			return nil, fmt.Errorf("cgroup v1: no %s controller", ctl)
		}
		dir := filepath.Join("/sys/fs/cgroup", ctl, path, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v1 %s: %w", ctl, err)
		}
		sweepStale(filepath.Dir(dir), name) // as on v2: see sweepStale
		c.base[ctl] = dir
	}
	c.sweep()
	return c, nil
}

// leafGroup is the group the worker (and its guardian) move into when
// their own group must pass controllers down (setupV2); no executor's or
// driver's group has this name.
const leafGroup = "worker"

// cgroupFS is the cgroup file system as setupV2 uses it (a fake in the
// tests enforces cgroup v2's rules).
type cgroupFS interface {
	MkdirAll(dir string) error
	Mkdir(dir string) error
	WriteFile(path, data string) error
	Remove(dir string) error
}

type osCgroupFS struct{}

func (osCgroupFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }
func (osCgroupFS) Mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}
func (osCgroupFS) WriteFile(path, data string) error { return os.WriteFile(path, []byte(data), 0) }
func (osCgroupFS) Remove(dir string) error           { return os.Remove(dir) }

// setupV2 makes root/own/name, the parent of the worker's groups, with
// the memory, cpu and pids controllers given to its children, and returns
// it.
//
// Where the worker's own group does not pass those controllers down, it
// must first enable them there, which cgroup v2 allows only in a group
// that holds no process itself (the "no internal processes" rule; the
// root group is exempt). That is a worker run by systemd with
// Delegate=yes: its unit's group holds the worker and its guardian. So
// they move into a leaf of their own, name/worker (movers are their
// pids), the controllers are enabled in the unit's group and in name, and
// the executors' groups become the leaf's siblings. The same holds in a
// container with a cgroup namespace of its own, whose root group is not
// the machine's (only that one is exempt). If some other process shares
// the group, the worker moves back and says why.
func setupV2(fs cgroupFS, root, own, name string, movers []int) (string, error) {
	ownDir := filepath.Join(root, own)
	dir := filepath.Join(ownDir, name)
	if err := fs.MkdirAll(dir); err != nil {
		return "", err
	}
	const enable = "+memory +cpu +pids"
	first := fs.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), enable)
	if first == nil {
		return dir, nil
	}
	if len(movers) == 0 {
		fs.Remove(dir)
		return "", fmt.Errorf("enabling memory, cpu and pids under %s: %w", dir, first)
	}
	leaf := filepath.Join(dir, leafGroup)
	moveAll := func(to string) error {
		for _, pid := range movers {
			err := fs.WriteFile(filepath.Join(to, "cgroup.procs"), strconv.Itoa(pid))
			if errors.Is(err, syscall.ESRCH) {
				continue // gone meanwhile (a guardian that died): nothing to move
			}
			if err != nil {
				return fmt.Errorf("moving pid %d into %s: %w", pid, to, err)
			}
		}
		return nil
	}
	enabledOwn := false
	err := fs.Mkdir(leaf)
	if err == nil {
		err = moveAll(leaf)
	}
	if err == nil {
		err = fs.WriteFile(filepath.Join(ownDir, "cgroup.subtree_control"), enable)
		if err != nil {
			err = fmt.Errorf("enabling memory, cpu and pids in the worker's own group %s, which must hold no other process (systemd: Delegate=yes, nothing else in the unit): %w", ownDir, err)
		}
		enabledOwn = err == nil
	}
	if err == nil {
		err = fs.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), enable)
	}
	if err != nil {
		// Back where they were: a group that gives controllers to its
		// children takes no process, so give them up first.
		var back error
		if enabledOwn {
			back = fs.WriteFile(filepath.Join(ownDir, "cgroup.subtree_control"), "-memory -cpu -pids")
		}
		if back == nil {
			back = moveAll(ownDir)
		}
		fs.Remove(leaf)
		fs.Remove(dir)
		return "", errors.Join(fmt.Errorf("%w (after: enabling memory, cpu and pids under %s: %v)", err, dir, first), back)
	}
	return dir, nil
}

// sweepStale removes the empty parents (and their empty groups) that
// earlier runs of workers left under parent, berth-<id>-<pid> of a pid
// that is gone, all but ours: a worker killed with its guardian (v1 or
// v2) removed neither its groups nor its parent, and a run whose worker
// moved into a leaf (v2) could not remove its own. A parent of a live
// worker (another of the same id, a restart while the old one drains) is
// left alone, and rmdir takes only empty groups: one that holds a process
// stays.
func sweepStale(parent, ours string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || name == ours || !strings.HasPrefix(name, "berth-") {
			continue
		}
		pid, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // not a worker's parent, or its worker lives
		}
		dir := filepath.Join(parent, name)
		children, _ := os.ReadDir(dir)
		for _, ch := range children {
			if ch.IsDir() {
				_ = os.Remove(filepath.Join(dir, ch.Name()))
			}
		}
		_ = os.Remove(dir)
	}
}

// sweep removes the groups an earlier run of this worker left (it was
// killed before it could): rmdir takes only empty ones, so a group that
// still holds a process stays.
func (c *cgroups) sweep() {
	for _, base := range c.base {
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if e.IsDir() {
				_ = os.Remove(filepath.Join(base, e.Name()))
			}
		}
	}
}

// ownCgroups reads /proc/self/cgroup: controller → this process's path
// ("" for the v2 hierarchy).
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			out[ctl] = parts[2]
		}
	}
	return out, sc.Err()
}

// close removes the worker's parent groups, once their children are gone
// (a group that still holds one stays).
func (c *cgroups) close() {
	if c == nil {
		return
	}
	for _, dir := range c.base {
		_ = os.Remove(dir)
	}
}

// cgroup is one process's group (one directory per v1 controller).
type cgroup struct {
	v2       bool
	dirs     map[string]string
	memoryMB int
}

// create makes the group name with the limits of cores and memoryMB.
func (c *cgroups) create(name string, cores, memoryMB int) (*cgroup, error) {
	g := &cgroup{v2: c.v2, dirs: map[string]string{}, memoryMB: memoryMB}
	for ctl, base := range c.base {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			g.remove()
			return nil, err
		}
		g.dirs[ctl] = dir
	}
	mem := strconv.FormatInt(int64(memoryMB)<<20, 10)
	var settings map[string]string
	if c.v2 {
		settings = map[string]string{"memory.max": mem, "memory.swap.max": "0",
			"cpu.weight": strconv.Itoa(min(max(cores*100, 1), 10000)), "pids.max": strconv.Itoa(c.pids)}
	} else {
		settings = map[string]string{"memory/memory.limit_in_bytes": mem,
			"cpu/cpu.shares": strconv.Itoa(max(cores*1024, 2)), "pids/pids.max": strconv.Itoa(c.pids)}
	}
	if memoryMB <= 0 { // asked for none: no memory limit (the master always asks)
		delete(settings, "memory.max")
		delete(settings, "memory.swap.max")
		delete(settings, "memory/memory.limit_in_bytes")
	}
	for file, v := range settings {
		if err := os.WriteFile(g.file(file), []byte(v), 0); err != nil {
			g.remove()
			return nil, fmt.Errorf("setting %s: %w", file, err)
		}
	}
	return g, nil
}

// file is a control file: "memory.max" (v2) or "memory/memory.limit_in_bytes" (v1).
func (g *cgroup) file(name string) string {
	if g.v2 {
		return filepath.Join(g.dirs[""], name)
	}
	ctl, f, _ := strings.Cut(name, "/")
	return filepath.Join(g.dirs[ctl], f)
}

// pids lists the processes in the group.
func (g *cgroup) pids() []int {
	var dir string
	for _, d := range g.dirs {
		dir = d
		break
	}
	data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// kill SIGKILLs every process in the group until none is left (a process
// that forks as it dies is caught by the next pass), for at most 2 s.
func (g *cgroup) kill() {
	if g.v2 {
		if os.WriteFile(g.file("cgroup.kill"), []byte("1"), 0) == nil {
			return
		}
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		pids := g.pids()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// oomKilled reports whether the kernel killed a process of the group for
// passing its memory limit.
func (g *cgroup) oomKilled() bool {
	name := "memory/memory.oom_control"
	if g.v2 {
		name = "memory.events"
	}
	data, err := os.ReadFile(g.file(name))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}

// remove deletes the group's directories (empty once its processes died).
func (g *cgroup) remove() {
	for _, dir := range g.dirs {
		_ = os.Remove(dir)
	}
}

// killCgroups kills every process in the groups under each parent and
// removes the groups and the parents (the guardian, once its worker died).
func killCgroups(parents []string) {
	for _, parent := range parents {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if e.IsDir() && e.Name() != leafGroup { // the leaf: the dead worker's and this guardian's
				g := &cgroup{dirs: map[string]string{"": filepath.Join(parent, e.Name())}}
				g.kill()
				g.remove()
			}
		}
		_ = os.Remove(parent)
	}
}

// join moves pid into the group (it is the worker, root, that writes the
// groups' cgroup.procs: they are never handed to a tenant).
func (g *cgroup) join(pid int) error {
	for _, dir := range g.dirs {
		procs := filepath.Join(dir, "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("%s: %w", procs, err)
		}
	}
	return nil
}
