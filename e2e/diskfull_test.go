package e2e

// A disk that fills (issue 21): a master's data directory and a worker's
// work directory, each on a small tmpfs of its own, filled to the last
// byte while the cluster works.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// mountTmpfs mounts a tmpfs of sizeMB on dir (made if need be) until the
// test ends.
func mountTmpfs(t *testing.T, dir string, sizeMB int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=0700", sizeMB)); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
}

// fill writes a file into dir until its file system has no space left,
// and returns a function that removes it.
func fill(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
		if i > 1<<16 {
			t.Fatalf("%s took 4 GiB and is not full", dir)
		}
	}
	// The last bytes the kernel can still give, a page at a time.
	small := make([]byte, 4096)
	for range 1024 {
		if _, err := f.Write(small); err != nil {
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
	}
}

func needRoot(t *testing.T, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip(what + " needs root (CI runs as root)")
	}
}

// A leader whose data directory fills answers the write it cannot store
// with 503 disk_full naming the cause, and gives way to a master that can
// write; writes go on through the others; a follower whose disk fills
// falls behind without stopping the cluster; once space returns each
// catches up; after every master is killed at once and started again,
// every acknowledged write is there and every file loads.
func TestMasterDiskFull(t *testing.T) {
	needRoot(t, "mounting a small tmpfs")
	t.Parallel()
	hc := startCluster(t, clusterSpec{masters: 3, cores: 2, memory: "1g", prepare: func(dir string) {
		for i := 1; i <= 3; i++ {
			mountTmpfs(t, filepath.Join(dir, fmt.Sprintf("m%d", i)), 64)
		}
	}})
	var acked []string
	register := func(name string, via func(wire.AppDescription) (string, error)) error {
		id, err := via(wire.AppDescription{Name: name, Command: []string{"true"}})
		if err == nil {
			acked = append(acked, id)
		}
		return err
	}
	viaClient := func(d wire.AppDescription) (string, error) { return hc.c.RegisterApp(callCtx(t, 30*time.Second), d) }
	for i := range 10 {
		if err := register(fmt.Sprintf("before-%d", i), viaClient); err != nil {
			t.Fatal(err)
		}
	}

	// The leader's disk fills: some write fails, saying why.
	full, _ := hc.leader(10 * time.Second)
	freeLeader := fill(t, full.DataDir)
	var refusal wire.Error
	direct := func(d wire.AppDescription) (string, error) {
		a, err := call(http.MethodPost, full.URL+"/v1/apps", secret, jsonOf(t, d))
		if err != nil {
			return "", err
		}
		if a.status != http.StatusOK {
			json.Unmarshal([]byte(a.body), &refusal)
			return "", fmt.Errorf("%d %s", a.status, a.body)
		}
		var s wire.Submitted
		return s.ID, json.Unmarshal([]byte(a.body), &s)
	}
	var lastErr error
	for i := 0; i < 500 && refusal.Code == ""; i++ {
		lastErr = register(fmt.Sprintf("full-%d", i), direct)
	}
	if refusal.Code != wire.CodeDiskFull || !strings.Contains(refusal.Error, "no space left on device") {
		t.Fatalf("writes to a leader with a full disk: last %v, refusal %+v; want a 503 disk_full saying no space is left", lastErr, refusal)
	}
	t.Logf("the full leader %s refused: %s", full.ID, refusal.Error)

	// Another master leads and takes writes.
	next, _ := hc.leader(30*time.Second, full)
	for i := range 10 {
		if err := register(fmt.Sprintf("after-%d", i), viaClient); err != nil {
			t.Fatalf("a write after %s gave way: %v", full.ID, err)
		}
	}
	t.Logf("%s leads after %s's disk filled", next.ID, full.ID)

	// A follower's disk fills too: the third master and the leader are a
	// quorum, and writes go on.
	follower := hc.others(full, next)[0]
	freeLeader() // the first one has space again, so that two can write
	freeFollower := fill(t, follower.DataDir)
	for i := range 10 {
		if err := register(fmt.Sprintf("follower-full-%d", i), viaClient); err != nil {
			t.Fatalf("a write while follower %s's disk is full: %v", follower.ID, err)
		}
	}
	freeFollower()

	// Every master catches up with every acknowledged write.
	slices.Sort(acked)
	for _, m := range hc.Masters {
		caughtUp(t, hc, m, acked)
	}

	// Power loss: every master killed at once, then started: nothing
	// acknowledged is lost, no file is left unreadable.
	for _, m := range hc.Masters {
		m.Proc().Kill()
	}
	for _, m := range hc.Masters {
		hc.restart(m)
	}
	hc.leader(30 * time.Second)
	for _, m := range hc.Masters {
		caughtUp(t, hc, m, acked)
	}
}

// caughtUp waits until m's own view lists every app in want.
func caughtUp(t *testing.T, hc *cluster, m *testcluster.Master, want []string) {
	t.Helper()
	testproc.Eventually(t, 30*time.Second, m.ID+" lists every acknowledged app", func() error {
		s, err := hc.view(m)
		if err != nil {
			return err
		}
		if got := appIDs(s); !containsAll(got, want) {
			return fmt.Errorf("%d of %d apps", len(got), len(want))
		}
		return nil
	})
}

// A worker whose work directory fills says so in status and gets nothing
// new, while what it runs goes on; once space returns it gets work again.
func TestWorkerDiskFull(t *testing.T) {
	needRoot(t, "mounting a small tmpfs")
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, cores: 2, memory: "1g", workers: []string{"w1"},
		workerFlags: []string{"--min-free-disk", "16m"},
		prepare:     func(dir string) { mountTmpfs(t, filepath.Join(dir, "work-w1"), 48) }})
	first, _, _ := cl.runLongApp("disk-first", 1)
	pids := cl.execPids()
	pid, ok := pids[first+"/0"]
	if !ok {
		t.Fatalf("no process for %s/0 among %v", first, pids)
	}

	free := fill(t, cl.worker("w1").WorkDir)
	cl.statusWhen(10*time.Second, "w1 reported with a full disk", func(s wire.ClusterStatus) error {
		for _, w := range s.Workers {
			if w.ID == "w1" && strings.Contains(w.DiskFull, "below --min-free-disk 16 MiB") && w.State == wire.WorkerAlive {
				return nil
			}
		}
		return fmt.Errorf("workers %+v", s.Workers)
	})
	spec := workerSpec("w2", 2, "1g")
	spec.Flags = append(spec.Flags, "--min-free-disk", "16m")
	if _, err := cl.AddWorker(spec); err != nil {
		t.Fatal(err)
	}
	cl.waitWorkers(20*time.Second, "w1", "w2")
	second, _, st := cl.runLongApp("disk-second", 1)
	if w := executorWorkers(st, second); !slices.Equal(w, []string{"w2"}) {
		t.Errorf("an app placed while w1's disk is full runs on %v, want w2 only", w)
	}
	if got := cl.execPids()[first+"/0"]; got != pid {
		t.Errorf("the executor on the full worker was pid %d, now %d: it should run on", pid, got)
	}

	free()
	cl.statusWhen(10*time.Second, "w1's disk no longer full", func(s wire.ClusterStatus) error {
		for _, w := range s.Workers {
			if w.ID == "w1" && w.DiskFull == "" {
				return nil
			}
		}
		return fmt.Errorf("workers %+v", s.Workers)
	})
	third, _, st := cl.runLongApp("disk-third", 2) // one free core on each worker
	if w := executorWorkers(st, third); !slices.Contains(w, "w1") {
		t.Errorf("once w1 has space again an app of 2 cores runs on %v, want w1 among them", w)
	}
}

// executorWorkers lists the workers app's executors run on, sorted.
func executorWorkers(st wire.ClusterStatus, app string) []string {
	var out []string
	for _, a := range st.ActiveApps {
		if a.ID == app {
			for _, e := range a.Executors {
				out = append(out, e.WorkerID)
			}
		}
	}
	slices.Sort(out)
	return out
}
