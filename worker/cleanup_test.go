package worker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The sweep removes the directories of what no longer runs here once they
// are older than the TTL, and nothing else: not what runs, however old; not
// what is recent; not files it does not know.
func TestCleanupRemovesOnlyStaleDirectoriesOfEndedWork(t *testing.T) {
	t.Parallel()
	const ttl = time.Hour
	fm, w := startRegistered(t, func(c *Config) { c.CleanupTTL = ttl })
	root := w.Config().WorkDir

	w.runSleeper("app-live", 0)
	w.launchExecutor("app-old", 0, helperCmd(t, "exit", "0"))
	fm.waitFinal(t, "app-old", 0)
	w.mustCall(200, "POST", "/v1/drivers", wire.LaunchDriver{Epoch: 5, DriverID: "drv-live", Process: wire.Process{Command: helperCmd(t, "sleep"), Env: helperEnvMap, Cores: 1}})
	pidOf(t, filepath.Join(root, driversDir, "drv-live"))
	w.mustCall(200, "POST", "/v1/drivers", wire.LaunchDriver{Epoch: 5, DriverID: "drv-old", Process: wire.Process{Command: helperCmd(t, "exit", "0"), Env: helperEnvMap, Cores: 1}})
	fm.waitDriverFinal(t, "drv-old")
	if err := os.WriteFile(filepath.Join(root, "operator-notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, trashPrefix+"left-over", "x"), 0o755); err != nil {
		t.Fatal(err)
	}

	// Nothing is old enough yet.
	if removed := w.cleanWorkDir(time.Now()); len(removed) != 0 {
		t.Fatalf("removed %v before the TTL", removed)
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(root, rel))
		return err == nil
	}
	if exists(trashPrefix + "left-over") {
		t.Error("a left-over trash directory was kept")
	}

	// Past the TTL: only the ended app and driver go.
	removed := w.cleanWorkDir(time.Now().Add(ttl + time.Minute))
	slices.Sort(removed)
	if want := []string{"app-old", filepath.Join(driversDir, "drv-old")}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for _, rel := range []string{"app-live", filepath.Join(driversDir, "drv-live"), "operator-notes.txt"} {
		if !exists(rel) {
			t.Errorf("%s was removed", rel)
		}
	}
	for _, rel := range []string{"app-old", filepath.Join(driversDir, "drv-old")} {
		if exists(rel) {
			t.Errorf("%s is still there", rel)
		}
	}
	// The running processes did not notice.
	if st := w.state(); len(st.Executors) != 1 || st.Executors[0].State != wire.ExecutorRunning || len(st.Drivers) != 1 {
		t.Errorf("state after the sweep: %+v", st)
	}
	// The app can come back: its directory is made again.
	w.runSleeper("app-old", 1)
}

// A TTL below zero (--cleanup-ttl 0) keeps everything.
func TestCleanupDisabled(t *testing.T) {
	fm, w := startParallel(t, func(c *Config) { c.CleanupTTL = -1 })
	w.launchExecutor("app-old", 0, helperCmd(t, "exit", "0"))
	fm.waitFinal(t, "app-old", 0)
	done := make(chan struct{})
	go func() { w.cleanupLoop(t.Context()); close(done) }()
	testproc.Receive(t, done, 5*time.Second, "the cleanup loop to return at once, cleanup being off")
	if _, err := os.Stat(w.execDir("app-old", 0)); err != nil {
		t.Errorf("an ended executor's directory went away with cleanup off: %v", err)
	}
}
