//go:build linux

package worker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fakeV2 is a cgroup v2 tree that enforces the rules setupV2 meets: a
// group's controllers are those its parent's subtree_control enables; a
// group other than the root cannot enable controllers for its children
// while it holds a process, nor take a process while it enables any
// ("no internal processes"); rmdir takes only an empty group.
type fakeV2 struct {
	root   string
	groups map[string]*fakeGroup
	// nsRoot: root is a cgroup namespace's (a container's), which the
	// rule does not exempt as it does the machine's root.
	nsRoot bool
	// fail makes a write to a path fail with its error.
	fail map[string]error
}

type fakeGroup struct {
	procs   []int
	subtree []string
}

func newFakeV2(root string) *fakeV2 {
	return &fakeV2{root: root, groups: map[string]*fakeGroup{root: {subtree: []string{"memory", "cpu", "pids"}}}}
}

func (f *fakeV2) controllers(dir string) []string {
	if dir == f.root {
		return []string{"memory", "cpu", "pids"}
	}
	return f.groups[filepath.Dir(dir)].subtree
}

func (f *fakeV2) MkdirAll(dir string) error {
	if _, ok := f.groups[dir]; ok || dir == f.root {
		return nil
	}
	if err := f.MkdirAll(filepath.Dir(dir)); err != nil {
		return err
	}
	f.groups[dir] = &fakeGroup{}
	return nil
}

func (f *fakeV2) Mkdir(dir string) error {
	if _, ok := f.groups[filepath.Dir(dir)]; !ok {
		return syscall.ENOENT
	}
	if _, ok := f.groups[dir]; !ok {
		f.groups[dir] = &fakeGroup{}
	}
	return nil
}

func (f *fakeV2) WriteFile(path, data string) error {
	if err := f.fail[path]; err != nil {
		return err
	}
	dir, file := filepath.Dir(path), filepath.Base(path)
	g, ok := f.groups[dir]
	if !ok {
		return syscall.ENOENT
	}
	switch file {
	case "cgroup.subtree_control":
		if (dir != f.root || f.nsRoot) && len(g.procs) > 0 {
			return syscall.EBUSY
		}
		for _, c := range strings.Fields(data) {
			if name, off := strings.CutPrefix(c, "-"); off {
				g.subtree = slices.DeleteFunc(g.subtree, func(x string) bool { return x == name })
				continue
			}
			c = strings.TrimPrefix(c, "+")
			if !slices.Contains(f.controllers(dir), c) {
				return syscall.ENOENT
			}
			if !slices.Contains(g.subtree, c) {
				g.subtree = append(g.subtree, c)
			}
		}
	case "cgroup.procs":
		if (dir != f.root || f.nsRoot) && len(g.subtree) > 0 {
			return syscall.EBUSY
		}
		pid, err := strconv.Atoi(data)
		if err != nil {
			return syscall.EINVAL
		}
		for _, o := range f.groups {
			o.procs = slices.DeleteFunc(o.procs, func(p int) bool { return p == pid })
		}
		g.procs = append(g.procs, pid)
	default:
		return syscall.EINVAL
	}
	return nil
}

func (f *fakeV2) Remove(dir string) error {
	g, ok := f.groups[dir]
	if !ok {
		return syscall.ENOENT
	}
	for d := range f.groups {
		if filepath.Dir(d) == dir {
			return syscall.EBUSY
		}
	}
	if len(g.procs) > 0 {
		return syscall.EBUSY
	}
	delete(f.groups, dir)
	return nil
}

// where says which group holds pid.
func (f *fakeV2) where(pid int) string {
	for d, g := range f.groups {
		if slices.Contains(g.procs, pid) {
			return d
		}
	}
	return ""
}

const (
	unit       = "/system.slice/berth-worker.service"
	workerPid  = 100
	guardPid   = 101
	cgroupRoot = "/sys/fs/cgroup"
)

// systemdTree is a machine whose systemd runs the worker with
// Delegate=yes: the unit's group holds the worker and its guardian and
// enables nothing for children yet.
func systemdTree() *fakeV2 {
	f := newFakeV2(cgroupRoot)
	f.MkdirAll(cgroupRoot + unit)
	f.groups[cgroupRoot+"/system.slice"].subtree = []string{"memory", "cpu", "pids"}
	u := f.groups[cgroupRoot+unit]
	u.procs = []int{workerPid, guardPid}
	return f
}

// Under systemd (Delegate=yes) on cgroup v2, the worker and its guardian
// move into a leaf of their own, so that the unit's group can give the
// controllers to the executors' groups (their limits enforced).
func TestCgroupV2WorkerMovesIntoALeafUnderSystemd(t *testing.T) {
	f := systemdTree()
	dir, err := setupV2(f, cgroupRoot, unit, "berth-w1-100", []int{workerPid, guardPid})
	if err != nil {
		t.Fatal(err)
	}
	if want := cgroupRoot + unit + "/berth-w1-100"; dir != want {
		t.Fatalf("parent of the groups %s, want %s", dir, want)
	}
	leaf := dir + "/" + leafGroup
	if f.where(workerPid) != leaf || f.where(guardPid) != leaf {
		t.Errorf("the worker in %q, its guardian in %q, want both in %s", f.where(workerPid), f.where(guardPid), leaf)
	}
	// An executor's group below it gets the controllers its limits need.
	exec := dir + "/executor-app-1-0"
	if err := f.Mkdir(exec); err != nil {
		t.Fatal(err)
	}
	if got := f.controllers(exec); !slices.Equal(got, []string{"memory", "cpu", "pids"}) {
		t.Errorf("an executor's group has controllers %v", got)
	}
	if err := f.WriteFile(exec+"/cgroup.procs", "200"); err != nil {
		t.Errorf("an executor cannot join its group: %v", err)
	}
}

// Where the worker's group is the root (a container of its own) or
// already passes the controllers down, nothing moves.
func TestCgroupV2NoMoveWhereNoneIsNeeded(t *testing.T) {
	f := newFakeV2(cgroupRoot)
	f.groups[cgroupRoot].procs = []int{workerPid, guardPid}
	dir, err := setupV2(f, cgroupRoot, "/", "berth-w1-100", []int{workerPid, guardPid})
	if err != nil || dir != cgroupRoot+"/berth-w1-100" {
		t.Fatalf("in the root group: %q, %v", dir, err)
	}
	if f.where(workerPid) != cgroupRoot {
		t.Errorf("the worker moved to %s", f.where(workerPid))
	}
}

// In a container with a cgroup namespace of its own, the worker's group
// is the namespace's root but not the machine's: the same move.
func TestCgroupV2WorkerMovesIntoALeafInAContainer(t *testing.T) {
	f := newFakeV2(cgroupRoot)
	f.nsRoot = true
	f.groups[cgroupRoot].procs = []int{workerPid, guardPid}
	f.groups[cgroupRoot].subtree = nil
	dir, err := setupV2(f, cgroupRoot, "/", "berth-w1-100", []int{workerPid, guardPid})
	if err != nil {
		t.Fatal(err)
	}
	if f.where(workerPid) != dir+"/"+leafGroup || !slices.Equal(f.controllers(dir+"/x"), []string{"memory", "cpu", "pids"}) {
		t.Errorf("the worker in %s, the executors' controllers %v", f.where(workerPid), f.controllers(dir+"/x"))
	}
}

// When another process shares the unit's group, the controllers cannot
// be enabled there: the worker says why, and it and its guardian are back
// where they were, nothing left behind.
func TestCgroupV2MovesBackWhenTheGroupIsShared(t *testing.T) {
	f := systemdTree()
	u := f.groups[cgroupRoot+unit]
	u.procs = append(u.procs, 300) // an ExecStartPre's leftover, a shell
	_, err := setupV2(f, cgroupRoot, unit, "berth-w1-100", []int{workerPid, guardPid})
	if err == nil || !strings.Contains(err.Error(), "must hold no other process") || !strings.Contains(err.Error(), "Delegate=yes") {
		t.Fatalf("err %v, want it to say the group must hold no other process", err)
	}
	if f.where(workerPid) != cgroupRoot+unit || f.where(guardPid) != cgroupRoot+unit {
		t.Errorf("the worker in %q, its guardian in %q, want both back in the unit's group", f.where(workerPid), f.where(guardPid))
	}
	if _, ok := f.groups[cgroupRoot+unit+"/berth-w1-100"]; ok {
		t.Error("the worker's parent group was left behind")
	}
}

// A failure after the unit's group gave its controllers away: it takes
// them back, so that the worker and its guardian can move back into it.
func TestCgroupV2MovesBackAfterALateFailure(t *testing.T) {
	f := systemdTree()
	dir := cgroupRoot + unit + "/berth-w1-100"
	f.fail = map[string]error{dir + "/cgroup.subtree_control": syscall.EINVAL}
	_, err := setupV2(f, cgroupRoot, unit, "berth-w1-100", []int{workerPid, guardPid})
	if err == nil {
		t.Fatal("no error")
	}
	if f.where(workerPid) != cgroupRoot+unit || f.where(guardPid) != cgroupRoot+unit {
		t.Errorf("the worker in %q, its guardian in %q, want both back in the unit's group (%v)", f.where(workerPid), f.where(guardPid), err)
	}
	if sub := f.groups[cgroupRoot+unit].subtree; len(sub) != 0 {
		t.Errorf("the unit's group still gives %v to its children", sub)
	}
}

// A guardian that died before the move does not stop it.
func TestCgroupV2MoveSkipsAGoneGuardian(t *testing.T) {
	f := systemdTree()
	u := f.groups[cgroupRoot+unit]
	u.procs = []int{workerPid}
	gone := &goneFS{fakeV2: f, gone: guardPid}
	if _, err := setupV2(gone, cgroupRoot, unit, "berth-w1-100", []int{workerPid, guardPid}); err != nil {
		t.Fatalf("with the guardian gone: %v", err)
	}
}

// goneFS answers ESRCH for a pid written to any cgroup.procs.
type goneFS struct {
	*fakeV2
	gone int
}

func (g *goneFS) WriteFile(path, data string) error {
	if filepath.Base(path) == "cgroup.procs" && data == strconv.Itoa(g.gone) {
		return syscall.ESRCH
	}
	return g.fakeV2.WriteFile(path, data)
}

// The guardian, once its worker died, empties and removes the executors'
// groups but not the leaf it sits in itself.
func TestGuardianSparesTheWorkersLeaf(t *testing.T) {
	parent := t.TempDir()
	var fs osCgroupFS
	for _, d := range []string{leafGroup, "executor-app-1-0", "driver-d1"} {
		if err := fs.Mkdir(filepath.Join(parent, d)); err != nil {
			t.Fatal(err)
		}
	}
	killCgroups([]string{parent})
	kept := map[string]bool{leafGroup: true, "executor-app-1-0": false, "driver-d1": false}
	for d, want := range kept {
		_, err := os.Stat(filepath.Join(parent, d))
		if got := err == nil; got != want {
			t.Errorf("%s there after the sweep: %v, want %v", d, got, want)
		}
	}
}

// Earlier runs' parents are swept only when their worker is gone: a live
// worker's (another of the same id) and names that are not a worker's
// parent stay.
func TestSweepStaleSparesLiveWorkers(t *testing.T) {
	parent := t.TempDir()
	exited := exec.Command("/bin/true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("berth-w1-%d", exited.Process.Pid)
	live := fmt.Sprintf("berth-w1-%d", os.Getpid())
	ours := "berth-w1-1" // pid 1 lives; ours is skipped by name anyway
	for _, d := range []string{dead, dead + "/executor-a-0", live, live + "/executor-b-0", "berth-w1-gpu", ours} {
		if err := os.MkdirAll(filepath.Join(parent, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sweepStale(parent, ours)
	for d, want := range map[string]bool{dead: false, live: true, live + "/executor-b-0": true, "berth-w1-gpu": true, ours: true} {
		_, err := os.Stat(filepath.Join(parent, d))
		if got := err == nil; got != want {
			t.Errorf("%s there after the sweep: %v, want %v", d, got, want)
		}
	}
}
