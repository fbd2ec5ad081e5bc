package worker

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/testproc"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("--run-as needs a worker running as root (CI runs as root)")
	}
}

// stat returns path's owner, group and mode.
func stat(t *testing.T, path string) (uint32, uint32, os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, fi.Mode().Perm()
}

// With --run-as nobody, a tenant's process runs as nobody with one group
// of its own and none of root's; it can read neither the worker's secret
// file nor another app's directory, and writes its own.
func TestRunAsKeepsTenantsApart(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here")
	}
	secretDir, err := os.MkdirTemp("", "berth-secret-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(secretDir) })
	os.Chmod(secretDir, 0o755) // reachable: only the file's mode protects it
	secretFile := filepath.Join(secretDir, "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "berth-runas-") // under /tmp: reachable by nobody
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o711)
	_, tw := startRegistered(t, func(c *Config) { c.RunAs = "nobody"; c.WorkDir = filepath.Join(base, "work") })
	work := tw.Config().WorkDir

	// App A writes a file and stays.
	tw.launchExecutor("app-a", 0, []string{"/bin/sh", "-c", "echo private > own.txt; echo ready; exec sleep 600"})
	testproc.Eventually(t, 10*time.Second, "app A's file", func() bool {
		_, err := os.Stat(filepath.Join(tw.execDir("app-a", 0), "own.txt"))
		return err == nil
	})
	// App B tries what a curious tenant would.
	probe := strings.Join([]string{
		"id -u", "id -G",
		"cat " + secretFile + "; echo secret:$?",
		"ls " + filepath.Join(work, "app-a") + "; echo list:$?",
		"cat " + filepath.Join(tw.execDir("app-a", 0), "own.txt") + "; echo read:$?",
		"ls " + work + "; echo listwork:$?",
		"echo mine > mine.txt; echo write:$?",
		"echo HOME=$HOME",
	}, "; ")
	tw.launchExecutor("app-b", 0, []string{"/bin/sh", "-c", probe})
	var out string
	testproc.Eventually(t, 10*time.Second, "app B's probe to finish", func() bool {
		data, _ := os.ReadFile(filepath.Join(tw.execDir("app-b", 0), "stdout"))
		out = string(data)
		return strings.Contains(out, "HOME=")
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != nobody.Uid {
		t.Errorf("uid %q, want nobody's %s", lines[0], nobody.Uid)
	}
	_, gidA, _ := stat(t, filepath.Join(work, "app-a"))
	_, gidB, _ := stat(t, filepath.Join(work, "app-b"))
	if lines[1] != strconv.Itoa(int(gidB)) || gidA == gidB || gidB < tenantGIDBase {
		t.Errorf("groups %q; app A's gid %d, app B's %d: want B's alone, apart from A's", lines[1], gidA, gidB)
	}
	for _, want := range []string{"secret:1", "list:2", "read:1", "listwork:2", "write:0", "HOME=" + nobody.HomeDir} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("the probe's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") || strings.Contains(out, "private") {
		t.Errorf("the probe read what is not its own:\n%s", out)
	}
	for path, want := range map[string]os.FileMode{work: 0o711, filepath.Join(work, "app-a"): 0o750, tw.execDir("app-a", 0): 0o770, filepath.Join(tw.execDir("app-a", 0), "stdout"): 0o640} {
		uid, gid, mode := stat(t, path)
		wantGID := gidA
		if path == work {
			wantGID = gid // root's own
		}
		if uid != 0 || gid != wantGID || mode != want {
			t.Errorf("%s: %d:%d %v, want root:%d %v", path, uid, gid, mode, wantGID, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(tw.execDir("app-b", 0), "mine.txt")); err != nil || string(data) != "mine\n" {
		t.Errorf("app B's own file: %q %v", data, err)
	}
}

func TestRunAsNamesItsFlag(t *testing.T) {
	if _, err := resolveRunAs("no-such-user-xyz"); err == nil || !strings.Contains(err.Error(), "--run-as") {
		t.Errorf("an unknown user: %v", err)
	}
	if os.Geteuid() == 0 {
		if r, err := resolveRunAs("65534"); err != nil || r.uid != 65534 {
			t.Errorf("a numeric uid: %+v %v", r, err)
		}
	}
	if r, _ := resolveRunAs("nobody"); r != nil {
		hidden := filepath.Join(t.TempDir(), "work") // t.TempDir is 0700
		if err := r.checkReachable(hidden); err == nil || !strings.Contains(err.Error(), "out of its reach") {
			t.Errorf("a work dir nobody cannot reach: %v", err)
		}
	}
	if r, err := resolveRunAs(""); r != nil || err != nil {
		t.Errorf("no --run-as: %+v %v", r, err)
	}
}
