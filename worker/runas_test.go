package worker

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("--run-as needs a worker running as root (CI runs as root)")
	}
}

// stat returns path's owner, group and mode (of the link itself).
func stat(t *testing.T, path string) (uint32, uint32, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, fi.Mode().Perm()
}

// runAsBase is a directory for a --run-as worker's work dir and secrets:
// under /tmp (reachable by any uid), 0711, removed at the end.
func runAsBase(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "berth-runas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	return base
}

// With --run-as dynamic, each app runs as a uid and gid of its own, with
// no other group, in a home of its own. What a curious tenant tries
// against another fails: reading the worker's secret, listing or reading
// the other app's files, signalling it, reading its environment, moving
// into its cgroup, planting a link where the worker writes its logs.
func TestRunAsDynamicKeepsTenantsApart(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	base := runAsBase(t)
	secretFile := filepath.Join(base, "secret") // as an operator keeps it: root's, 0600
	if err := os.WriteFile(secretFile, []byte("s3cret-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, tw := startRegistered(t, func(c *Config) { c.RunAs = runAsDynamic; c.WorkDir = filepath.Join(base, "work") })
	work := tw.Config().WorkDir

	// App A writes a file in its home and stays, its token in its env.
	tw.mustCall(200, "POST", "/v1/executors", launchOf("app-a", 0, []string{"/bin/sh", "-c", "echo $$; echo private > own.txt; exec sleep 600"}, map[string]string{"A_TOKEN": "a-private-token"}))
	pidA := 0
	testproc.Eventually(t, 10*time.Second, "app A's pid and file", func() bool {
		data, _ := os.ReadFile(filepath.Join(tw.execDir("app-a", 0), "stdout"))
		_, err := fmt.Sscanf(string(data), "%d", &pidA)
		_, ferr := os.Stat(filepath.Join(tw.execDir("app-a", 0), homeDir, "own.txt"))
		return err == nil && ferr == nil
	})
	cgroupProcsA := "/nonexistent/cgroup.procs"
	if tw.cg != nil {
		for _, dir := range tw.cg.base {
			cgroupProcsA = filepath.Join(dir, "executor-app-a-0", "cgroup.procs")
		}
	}
	// App B tries what a curious tenant would.
	probe := strings.Join([]string{
		"id -u", "id -G",
		"cat " + secretFile + "; echo secret:$?",
		"ls " + filepath.Join(work, "app-a") + "; echo list:$?",
		"cat " + filepath.Join(tw.execDir("app-a", 0), homeDir, "own.txt") + "; echo read:$?",
		"ls " + work + "; echo listwork:$?",
		"echo mine > mine.txt; echo write:$?",
		"echo HOME=$HOME TMPDIR=$TMPDIR",
		"kill -0 " + strconv.Itoa(pidA) + "; echo signal:$?",
		"cat /proc/" + strconv.Itoa(pidA) + "/environ; echo environ:$?",
		"echo $$ > " + cgroupProcsA + "; echo cgroup:$?",
		"ln -sf " + secretFile + " ../stdout.1; echo plant:$?",
		"echo done",
	}, "; ")
	tw.launchExecutor("app-b", 0, []string{"/bin/sh", "-c", probe})
	var out string
	testproc.Eventually(t, 10*time.Second, "app B's probe to finish", func() bool {
		data, _ := os.ReadFile(filepath.Join(tw.execDir("app-b", 0), "stdout"))
		out = string(data)
		return strings.Contains(out, "done\n")
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	_, idA, _ := stat(t, filepath.Join(work, "app-a"))
	_, idB, _ := stat(t, filepath.Join(work, "app-b"))
	if lines[0] != strconv.Itoa(int(idB)) || lines[1] != lines[0] || idA == idB || !isTenantID(idB) || !isTenantID(idA) {
		t.Errorf("uid %q, groups %q; app A's id %d, app B's %d: want B's own uid and gid alone, apart from A's", lines[0], lines[1], idA, idB)
	}
	homeB := filepath.Join(tw.execDir("app-b", 0), homeDir)
	for _, want := range []string{"secret:1", "list:2", "read:1", "listwork:2", "write:0", "HOME=" + homeB + " TMPDIR=" + homeB,
		"signal:1", "environ:1", "cgroup:", "plant:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the probe's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cgroup:0") {
		t.Errorf("app B moved itself into app A's cgroup:\n%s", out)
	}
	for _, leak := range []string{"s3cret-file", "private", "a-private-token"} {
		if strings.Contains(out, leak) {
			t.Errorf("the probe read %q, which is not its own:\n%s", leak, out)
		}
	}
	a0 := tw.execDir("app-a", 0)
	for path, want := range map[string]struct {
		uid, gid uint32
		mode     os.FileMode
	}{
		work:                                  {0, 0, 0o711},
		filepath.Join(work, "app-a"):          {0, idA, 0o750},
		a0:                                    {0, idA, 0o750},
		filepath.Join(a0, "stdout"):           {0, idA, 0o640},
		filepath.Join(a0, homeDir):            {idA, idA, 0o700},
		filepath.Join(a0, homeDir, "own.txt"): {idA, idA, 0},
	} {
		uid, gid, mode := stat(t, path)
		if path == work {
			want.gid = gid // root's own
		}
		if uid != want.uid || gid != want.gid || want.mode != 0 && mode != want.mode {
			t.Errorf("%s: %d:%d %v, want %d:%d %v", path, uid, gid, mode, want.uid, want.gid, want.mode)
		}
	}
	if data, err := os.ReadFile(filepath.Join(homeB, "mine.txt")); err != nil || string(data) != "mine\n" {
		t.Errorf("app B's own file: %q %v", data, err)
	}
	// A second executor of app A on this worker shares A's identity.
	tw.launchExecutor("app-a", 1, []string{"/bin/sh", "-c", "id -u; cat ../../0/home/own.txt"})
	testproc.Eventually(t, 10*time.Second, "app A's second executor", func() bool {
		data, _ := os.ReadFile(filepath.Join(tw.execDir("app-a", 1), "stdout"))
		return string(data) == fmt.Sprintf("%d\nprivate\n", idA)
	})
}

// A driver runs as an identity of its own too, apart from every app's.
func TestRunAsDynamicGivesADriverItsOwnIdentity(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	base := runAsBase(t)
	_, tw := startRegistered(t, func(c *Config) { c.RunAs = runAsDynamic; c.WorkDir = filepath.Join(base, "work") })
	tw.launchExecutor("app-x", 0, []string{"/bin/sh", "-c", "id -u"})
	tw.mustCall(200, "POST", "/v1/drivers", driverLaunchOf("drv-x", false, []string{"/bin/sh", "-c", "id -u; id -G; echo HOME=$HOME"}))
	var app, drv string
	testproc.Eventually(t, 10*time.Second, "both outputs", func() bool {
		a, _ := os.ReadFile(filepath.Join(tw.execDir("app-x", 0), "stdout"))
		d, _ := os.ReadFile(filepath.Join(tw.Config().WorkDir, driversDir, "drv-x", "stdout"))
		app, drv = string(a), string(d)
		return strings.Count(app, "\n") == 1 && strings.Contains(drv, "HOME=")
	})
	_, id, _ := stat(t, filepath.Join(tw.Config().WorkDir, driversDir, "drv-x"))
	want := fmt.Sprintf("%d\n%d\nHOME=%s\n", id, id, filepath.Join(tw.Config().WorkDir, driversDir, "drv-x", homeDir))
	if drv != want || app == drv[:len(app)] || !isTenantID(id) {
		t.Errorf("driver printed %q, want %q; the app's uid %q", drv, want, app)
	}
}

func TestRunAsTakesDynamicOnly(t *testing.T) {
	for _, spec := range []string{"nobody", "65534", "root"} {
		if _, err := resolveRunAs(spec); err == nil || !strings.Contains(err.Error(), "--run-as") || !strings.Contains(err.Error(), "dynamic") {
			t.Errorf("--run-as %s: %v, want a refusal naming --run-as dynamic", spec, err)
		}
	}
	if r, err := resolveRunAs(""); r != nil || err != nil {
		t.Errorf("no --run-as: %+v %v", r, err)
	}
	if os.Geteuid() == 0 {
		r, err := resolveRunAs(runAsDynamic)
		if err != nil {
			t.Fatal(err)
		}
		hidden := filepath.Join(t.TempDir(), "work") // t.TempDir is 0700
		if err := r.checkReachable(hidden); err == nil || !strings.Contains(err.Error(), "out of the tenants' reach") {
			t.Errorf("a work dir tenants cannot reach: %v", err)
		}
	}
}

// Identities are handed out in turn, past those on disk (an earlier run's
// too), and the same app keeps its own.
func TestRunAsIdentitiesAreNotReusedSoon(t *testing.T) {
	requireRoot(t)
	work := t.TempDir()
	for _, d := range []string{"old-app", driversDir} {
		if err := os.Mkdir(filepath.Join(work, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(work, "old-app"), 0, tenantIDBase+41); err != nil {
		t.Fatal(err)
	}
	r, err := resolveRunAs(runAsDynamic)
	if err != nil {
		t.Fatal(err)
	}
	root, err := openRootDir(work)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	claim := func(name string) uint32 {
		t.Helper()
		d, err := root.sub(name, true, 0o750)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		id, err := r.claim(root, d)
		if err != nil {
			t.Fatal(err)
		}
		if id.uid != id.gid {
			t.Errorf("%s: uid %d, gid %d", name, id.uid, id.gid)
		}
		return id.uid
	}
	a, b := claim("app-a"), claim("app-b")
	if a != tenantIDBase+42 || b != tenantIDBase+43 {
		t.Errorf("new apps got %d and %d, want the two after the old app's %d", a, b, tenantIDBase+41)
	}
	if again := claim("app-a"); again != a {
		t.Errorf("app A claimed again: %d, want its own %d", again, a)
	}
	if old := claim("old-app"); old != tenantIDBase+41 {
		t.Errorf("the old app: %d, want its own", old)
	}
	os.Remove(filepath.Join(work, "app-b"))
	if c := claim("app-c"); c != tenantIDBase+44 {
		t.Errorf("after app B's directory went, a new app got %d, want %d (not B's, freed just now)", c, tenantIDBase+44)
	}
}

// A tenant mapped to a Unix user runs as that user on a --run-as dynamic
// worker; a user the worker does not have fails the launch, saying so.
func TestRunAsATenantsUnixUser(t *testing.T) {
	requireRoot(t)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here")
	}
	t.Parallel()
	base := runAsBase(t)
	fm, tw := startRegistered(t, func(c *Config) { c.RunAs = runAsDynamic; c.WorkDir = filepath.Join(base, "work") })
	l := launchOf("app-u", 0, []string{"/bin/sh", "-c", "id -u; id -g"}, nil)
	l.User = "nobody"
	tw.mustCall(200, "POST", "/v1/executors", l)
	fm.waitFinal(t, "app-u", 0)
	out, _ := os.ReadFile(filepath.Join(tw.execDir("app-u", 0), "stdout"))
	if string(out) != nobody.Uid+"\n"+nobody.Gid+"\n" {
		t.Errorf("the executor ran as %q, want nobody (%s:%s)", out, nobody.Uid, nobody.Gid)
	}
	l = launchOf("app-v", 0, []string{"/bin/true"}, nil)
	l.User = "no-such-user-x"
	tw.mustCall(200, "POST", "/v1/executors", l)
	reps := fm.waitFinal(t, "app-v", 0)
	if got := reps[len(reps)-1]; got.State != wire.ExecutorFailed || !strings.Contains(got.Message, "no-such-user-x") {
		t.Errorf("an unknown user: %s %q, want FAILED naming it", got.State, got.Message)
	} else if got.Cause != wire.CauseProcess {
		// The tenant's, not the worker's: charged to the worker, three apps
		// of one tenant whose user this host lacks benched it for everyone.
		t.Errorf("an unknown user's failure is charged to %q, want the app's (not the worker's health)", got.Cause)
	}
}

// The next identity is the slot's, not the work directory's: a worker
// restarted on a wiped work directory, or a new worker given the slot of
// one that is gone, went back to the bottom of the range, handing a new
// tenant the uid of one gone a minute ago (and what it left in /tmp).
func TestRunAsGoesOnFromTheSlotsNextIdentity(t *testing.T) {
	requireRoot(t)
	host, work := t.TempDir(), t.TempDir()
	claimIn := func(work, app string) (uint32, *hostSlot) {
		t.Helper()
		slot, _, err := claimHostSlot(host, work, wire.PortRange{}, false)
		if err != nil {
			t.Fatal(err)
		}
		r, err := resolveRunAs(runAsDynamic)
		if err != nil {
			t.Fatal(err)
		}
		r.within(slot)
		root, err := openRootDir(work)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		d, err := root.sub(app, true, 0o750)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		id, err := r.claim(root, d)
		if err != nil {
			t.Fatal(err)
		}
		return id.uid, slot
	}
	first, slot := claimIn(work, "app-a")
	lo, _ := slot.identities()
	if first != lo {
		t.Fatalf("the first app: %d, want the range's first %d", first, lo)
	}
	slot.release()
	os.RemoveAll(filepath.Join(work, "app-a")) // the work directory wiped
	second, slot := claimIn(work, "app-b")
	if second != lo+1 {
		t.Errorf("after a restart on a wiped work directory: %d, want %d (not app A's, given a moment ago)", second, lo+1)
	}
	slot.release()
	os.RemoveAll(work) // the worker and its directory gone: a new one gets the slot
	third, slot := claimIn(t.TempDir(), "app-c")
	if third != lo+2 || slot.index != 0 {
		t.Errorf("a new worker of the slot: %d (slot %d), want %d of slot 0", third, slot.index, lo+2)
	}
	slot.release()
}
