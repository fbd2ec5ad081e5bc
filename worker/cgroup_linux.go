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
func setupCgroups(workerID string, pidsMax int) (*cgroups, error) {
	name := fmt.Sprintf("berth-%s-%d", workerID, os.Getpid())
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	c := &cgroups{base: map[string]string{}, pids: pidsMax}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		c.v2 = true
		dir := filepath.Join("/sys/fs/cgroup", own[""], name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +cpu +pids"), 0); err != nil {
			return nil, fmt.Errorf("cgroup v2: enabling memory, cpu and pids under %s: %w", dir, err)
		}
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
		c.base[ctl] = dir
	}
	c.sweep()
	return c, nil
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
			if e.IsDir() {
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
