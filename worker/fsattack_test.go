package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The worker never follows a link in a process's directory: whatever put
// one there (a tenant of an older layout, anything), the worker refuses
// it or replaces the link itself, and the file it points at stays as it
// was. The links are planted by the test; under --run-as a tenant cannot
// write there at all (TestRunAsDynamicKeepsTenantsApart).

func newTarget(t *testing.T, content string) *testproc.Target {
	return testproc.NewTarget(t, t.TempDir(), "secret", content)
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// Log reads refuse a symlink or a hard link planted under a log's name, or
// rolled log's, and never send the file it leads to.
func TestLogReadsRefusePlantedLinks(t *testing.T) {
	_, tw := startParallel(t, nil)
	secret := newTarget(t, "the-operator-secret\n")
	tw.launchExecutor("app-l", 0, []string{"/bin/sh", "-c", "echo mine; echo err >&2"})
	fmwait := func() {
		testproc.Eventually(t, 10*time.Second, "the executor to end", func() bool { return len(tw.state().Executors) == 0 })
	}
	fmwait()
	dir := tw.execDir("app-l", 0)
	symlink(t, secret.Path, filepath.Join(dir, "stdout.1"))
	if err := os.Link(secret.Path, filepath.Join(dir, "stderr.1")); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"stdout", "stderr"} {
		status, body := tw.call("GET", "/v1/executors/app-l/0/logs/"+stream, nil)
		if status != 403 || strings.Contains(body, "the-operator-secret") {
			t.Errorf("%s with a planted link: %d %q, want 403 without the secret", stream, status, body)
		}
	}
	// The process's directory itself swapped for a link.
	os.RemoveAll(dir)
	symlink(t, filepath.Dir(secret.Path), dir)
	// A regular file of root's, as the worker's own logs are: only the
	// directory's link stands between it and the reader.
	if err := os.WriteFile(filepath.Join(filepath.Dir(secret.Path), "stdout"), []byte(secret.Data), 0o600); err != nil {
		t.Fatal(err)
	}
	status, body := tw.call("GET", "/v1/executors/app-l/0/logs/stdout", nil)
	if status != 403 || strings.Contains(body, "the-operator-secret") {
		t.Errorf("a linked directory: %d %q, want 403 without the secret", status, body)
	}
	secret.Untouched(t)
}

// A launch into a directory whose log names are links fails, and the
// files they lead to are neither appended to, nor chowned, nor chmodded;
// a link under the resources file's name is replaced, not followed; a
// linked process directory is refused.
func TestLaunchesRefusePlantedLinks(t *testing.T) {
	fm, tw := startParallel(t, nil)
	work := tw.Config().WorkDir
	for i, name := range []string{wire.LogStdout, wire.LogStderr} {
		tg := newTarget(t, "root:x:0:0::/root:/bin/sh\n")
		id := []string{"drv-out", "drv-err"}[i]
		dir := filepath.Join(work, driversDir, id)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		symlink(t, tg.Path, filepath.Join(dir, name))
		tw.mustCall(200, "POST", "/v1/drivers", driverLaunchOf(id, true, []string{"/bin/sh", "-c", "echo appended; exit 1"}))
		reps := fm.waitDriverFinal(t, id)
		got := reps[len(reps)-1]
		if got.State != wire.DriverError || !strings.Contains(got.Message, "not a regular file made by the worker") {
			t.Errorf("driver %s with %s linked: %s %q, want ERROR naming the link", id, name, got.State, got.Message)
		}
		tg.Untouched(t)
	}

	tg := newTarget(t, "keep me\n")
	dir := filepath.Join(work, "app-r", "0")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	symlink(t, tg.Path, filepath.Join(dir, resourcesFile))
	l := launchOf("app-r", 0, []string{"/bin/sh", "-c", "cat " + filepath.Join(dir, resourcesFile)}, nil)
	tw.mustCall(200, "POST", "/v1/executors", l)
	fm.waitFinal(t, "app-r", 0)
	if data, _ := os.ReadFile(filepath.Join(dir, "stdout")); string(data) != "[]\n" {
		t.Errorf("the resources file read by the process: %q, want an empty list", data)
	}
	if fi, err := os.Lstat(filepath.Join(dir, resourcesFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the resources file is not a regular file: %v %v", fi, err)
	}
	tg.Untouched(t)

	// The executor's directory itself a link to a directory elsewhere.
	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "app-d"), 0o750); err != nil {
		t.Fatal(err)
	}
	symlink(t, elsewhere, filepath.Join(work, "app-d", "0"))
	tw.launchExecutor("app-d", 0, []string{"/bin/sh", "-c", "echo hi"})
	if reps := fm.waitFinal(t, "app-d", 0); len(reps) == 0 {
		t.Error("no final state")
	} else if got := reps[len(reps)-1]; got.State != wire.ExecutorFailed || !strings.Contains(got.Message, "not a regular file made by the worker") {
		t.Errorf("a linked executor directory: %s %q, want FAILED naming the link", got.State, got.Message)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("the worker wrote through the link: %v", entries)
	}
}

// Rolling renames the names in the process's directory, links included,
// and never writes through one.
func TestLogRollingReplacesPlantedLinks(t *testing.T) {
	fm, tw := startParallel(t, func(c *Config) { c.LogMaxSize = 64; c.LogMaxFiles = 3 })
	tg := newTarget(t, "do not write here\n")
	dir := tw.execDir("app-roll", 0)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		symlink(t, tg.Path, filepath.Join(dir, rolledName(wire.LogStdout, i)))
	}
	tw.launchExecutor("app-roll", 0, []string{"/bin/sh", "-c", `i=0; while [ $i -lt 40 ]; do echo "line $i of the output"; i=$((i+1)); done`})
	fm.waitFinal(t, "app-roll", 0)
	for i := 1; i <= 3; i++ {
		if fi, err := os.Lstat(filepath.Join(dir, rolledName(wire.LogStdout, i))); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("stdout.%d: %v %v, want a regular file the worker rolled", i, fi, err)
		}
	}
	if _, tail := tw.call("GET", "/v1/executors/app-roll/0/logs/stdout?tail=22", nil); tail != "line 39 of the output\n" {
		t.Errorf("the log's tail: %q", tail)
	}
	tg.Untouched(t)
}
