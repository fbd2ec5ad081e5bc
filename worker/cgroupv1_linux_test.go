//go:build linux

package worker

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// On cgroup v1 a worker killed together with its guardian leaves its
// parents, berth-<id>-<pid>, in each of the memory, cpu and pids
// hierarchies; the next worker to start there sweeps them, as on v2,
// sparing a live worker's. On the machine's own cgroup v1 tree (skipped
// on v2, or where the test may not make groups).
func TestCgroupV1SweepsStaleParents(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t.Skip("cgroup v2 here: TestSweepStaleSparesLiveWorkers and setupV2's tests cover it")
	}
	own, err := ownCgroups()
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	exited := exec.Command("/bin/true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	liveProc := exec.Command("/bin/sleep", "60")
	if err := liveProc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		liveProc.Process.Kill()
		liveProc.Wait()
	})
	id := "v1-sweep-" + strconv.Itoa(os.Getpid())
	dead := fmt.Sprintf("berth-%s-%d", id, exited.Process.Pid)
	live := fmt.Sprintf("berth-%s-%d", id, liveProc.Process.Pid)
	var parents []string // each controller's directory of the worker's parents
	for _, ctl := range v1Controllers {
		path, ok := own[ctl]
		if !ok {
			t.Skipf("cgroup v1 without the %s controller", ctl)
		}
		parent := filepath.Join("/sys/fs/cgroup", ctl, path)
		for _, d := range []string{dead + "/executor-a-0", live + "/executor-b-0"} {
			dir := filepath.Join(parent, d)
			if err := os.MkdirAll(dir, 0o755); errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EROFS) {
				t.Skipf("may not make cgroups here: %v", err)
			} else if err != nil {
				t.Fatal(err)
			}
		}
		parents = append(parents, parent)
	}
	t.Cleanup(func() {
		for _, parent := range parents {
			for _, d := range []string{dead + "/executor-a-0", dead, live + "/executor-b-0", live} {
				_ = os.Remove(filepath.Join(parent, d))
			}
		}
	})

	cg, err := setupCgroups(id, 64)
	if err != nil {
		t.Fatalf("setting up on cgroup v1: %v", err)
	}
	defer cg.close()
	if cg.v2 {
		t.Fatal("set up as cgroup v2 on a v1 machine")
	}
	for _, parent := range parents {
		for d, want := range map[string]bool{dead: false, dead + "/executor-a-0": false, live: true, live + "/executor-b-0": true} {
			_, err := os.Stat(filepath.Join(parent, d))
			if got := err == nil; got != want {
				t.Errorf("%s there after the sweep: %v, want %v", filepath.Join(parent, d), got, want)
			}
		}
	}
	for ctl, dir := range cg.base {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("the worker's own %s parent: %v", ctl, err)
		}
	}
}
