package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// deadSocket leaves a socket file no one serves at path, as a worker
// killed before its guardian could remove it.
func deadSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

// A dead worker's sockets of the slot are swept at start, another slot's
// and other files are left; stop removes the socket; the directory is
// made 0755 where missing.
func TestNamesSocketIsSweptAndRemoved(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(userdbTestDir(t), "systemd", "userdb")
	s := startNames(t, dir)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("%s made: %v %v, want 0755 (every tenant's nss-systemd reaches it)", d, fi, err)
		}
	}
	s.stop()
	if exists(s.path) {
		t.Fatalf("%s left after stop", s.path)
	}
	deadSocket(t, filepath.Join(dir, "io.berth.worker.2"))
	deadSocket(t, filepath.Join(dir, "io.berth.worker.2-4242"))
	deadSocket(t, filepath.Join(dir, "io.berth.worker.3"))
	deadSocket(t, filepath.Join(dir, "io.berth.worker.21"))
	if err := os.WriteFile(filepath.Join(dir, "io.berth.worker.2-7"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = startNames(t, dir)
	if s.shared || filepath.Base(s.path) != "io.berth.worker.2" {
		t.Errorf("after a dead worker: serving %s (shared %v), want io.berth.worker.2", s.path, s.shared)
	}
	if exists(filepath.Join(dir, "io.berth.worker.2-4242")) {
		t.Error("a dead worker's socket of the slot left")
	}
	for _, other := range []string{"io.berth.worker.3", "io.berth.worker.21", "io.berth.worker.2-7"} {
		if !exists(filepath.Join(dir, other)) {
			t.Errorf("%s, not the slot's dead socket, was removed", other)
		}
	}
	if rep := ask(t, s, getUser(s, `"uid":2003125000`)); rep.Error != "" {
		t.Errorf("after the sweep: %+v", rep)
	}
	// What is not a socket is never removed; the worker says so instead.
	other := userdbTestDir(t)
	if err := os.Mkdir(filepath.Join(other, "io.berth.worker.2"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := serveNames(context.Background(), slog.New(slog.DiscardHandler), other, testSlot, testLo, testHi); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a directory at the socket's name: %v, want an error saying it is not a socket", err)
	}
	if err := os.Chmod(other, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := serveNames(context.Background(), slog.New(slog.DiscardHandler), other, testSlot, testLo, testHi); err == nil || !strings.Contains(err.Error(), "no one else writing it") {
		t.Errorf("a names' directory others may write: %v, want it refused", err)
	}
}

// Two workers of one slot number (two --host-dirs): the second serves as
// base-PID, both answer, and each one's stop removes its own socket only.
func TestNamesOfOneSlotTwiceDoNotClash(t *testing.T) {
	t.Parallel()
	dir := userdbTestDir(t)
	first := startNames(t, dir)
	second := startNames(t, dir)
	if first.shared || !second.shared || second.path != fmt.Sprintf("%s-%d", first.path, os.Getpid()) {
		t.Fatalf("first %s (shared %v), second %s (shared %v): want the second on base-PID", first.path, first.shared, second.path, second.shared)
	}
	if rep := ask(t, second, getUser(second, `"uid":2003125000`)); rep.Error != "" || rep.Parameters["record"].(map[string]any)["service"] != filepath.Base(second.path) {
		t.Errorf("the second: %+v", rep)
	}
	if rep := ask(t, second, getUser(first, `"uid":2003125000`)); rep.Error != errBadService {
		t.Errorf("the second asked as the first: %+v, want BadService", rep)
	}
	first.stop()
	if exists(first.path) || !exists(second.path) {
		t.Fatalf("after the first's stop: first's %v, second's %v; want only the second's", exists(first.path), exists(second.path))
	}
	if rep := ask(t, second, getUser(second, `"uid":2003125000`)); rep.Error != "" {
		t.Errorf("the second after the first stopped: %+v", rep)
	}
	// A socket put at a server's path after it started is never removed by
	// it (the server's own renamed aside, so that its inode stays taken).
	if err := os.Rename(second.path, second.path+".old"); err != nil {
		t.Fatal(err)
	}
	deadSocket(t, second.path)
	second.stop()
	if !exists(second.path) {
		t.Error("stop removed a later socket of the same name")
	}
}

// The guardian removes the socket of a worker that died without its stop
// (SIGKILL), and only if it is still that worker's.
func TestGuardianRemovesADeadWorkersSocket(t *testing.T) {
	t.Parallel()
	dir := userdbTestDir(t)
	ours, replaced := filepath.Join(dir, "io.berth.worker.0"), filepath.Join(dir, "io.berth.worker.1")
	ident := map[string]socketID{}
	for _, p := range []string{ours, replaced} {
		deadSocket(t, p)
		id, err := statSocketID(p)
		if err != nil {
			t.Fatal(err)
		}
		ident[p] = id
	}
	// A later worker of slot 1 replaced the dead one's socket (renamed
	// aside here, so that its inode number cannot come back).
	if err := os.Rename(replaced, replaced+".old"); err != nil {
		t.Fatal(err)
	}
	deadSocket(t, replaced)
	var lines strings.Builder
	for _, p := range []string{ours, replaced} {
		fmt.Fprintf(&lines, "s%d %d %d %s\n", ident[p].dev, ident[p].ino, ident[p].born, p)
	}
	if code := runGuardian(strings.NewReader(lines.String())); code != 0 {
		t.Fatalf("guardian exit %d", code)
	}
	if exists(ours) || !exists(replaced) {
		t.Errorf("after the guardian: the dead worker's %v (want gone), a later one's %v (want kept)", exists(ours), exists(replaced))
	}
}

// A worker with --run-as dynamic serves its slot's names while it runs,
// and removes the socket when it stops.
func TestWorkerServesItsSlotsNames(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	base := runAsBase(t)
	dir := userdbTestDir(t)
	_, tw := startRegistered(t, func(c *Config) {
		c.RunAs = runAsDynamic
		c.WorkDir = filepath.Join(base, "work")
		c.userdbDir = dir
	})
	path := filepath.Join(dir, "io.berth.worker.0")
	testproc.Eventually(t, 10*time.Second, "the worker's names' socket", func() bool { return exists(path) })
	c := dialNames(t, path)
	send(t, c, `{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"uid":2000000007,"service":"io.berth.worker.0"}}`)
	rep, err := receive(c, bufio.NewReader(c))
	if err != nil || rep.Parameters["record"].(map[string]any)["userName"] != "berth-2000000007" {
		t.Fatalf("the worker's names: %+v %v", rep, err)
	}
	tw.stop()
	if exists(path) {
		t.Error("the names' socket left after the worker stopped")
	}
}

// The start's check runs getent as the identity and says what is wrong.
func TestCheckNamesSaysWhatIsWrong(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	dir := userdbTestDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const id = 2004687499
	fake := func(name, script string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for what, tc := range map[string]struct{ script, want string }{
		"names resolve":  {`[ "$(id -u):$(id -g):$(id -G)" = "2004687499:2004687499:2004687499" ] || exit 9; echo "berth-$2:x:$2:$2:berth dynamic identity:/:/usr/sbin/nologin"`, ""},
		"no nss-systemd": {`exit 2`, "install libnss-systemd or give the tenant a unixUser"},
		"no group":       {`[ "$1" = group ] && exit 2; echo "berth-$2:x:$2:$2::/:/x"`, "getent group 2004687499 finds nothing"},
		"another name":   {`echo "alice:x:$2:$2::/home/alice:/bin/sh"`, `passwd 2004687499 is "alice" on this host`},
		"getent fails":   {`exit 1`, "exit status 1"},
	} {
		got := checkNames(context.Background(), fake(strings.ReplaceAll(what, " ", "-"), tc.script), id)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", what, got, tc.want)
		}
	}
	var w Worker
	w.log = slog.New(slog.DiscardHandler)
	w.checkNamesAtStart(context.Background(), nil) // nothing served, nothing to say: no panic
}

// Two workers of one host in two --host-dirs both take slot 0, and would
// hand one uid to two tenants: the second finds the first's names' socket
// live and does not start.
func TestASecondWorkerOfOneSlotNumberDoesNotStart(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	base := runAsBase(t)
	dir := userdbTestDir(t)
	fm, _ := startRegistered(t, func(c *Config) {
		c.RunAs = runAsDynamic
		c.WorkDir = filepath.Join(base, "work-a")
		c.userdbDir = dir
	})
	testproc.Eventually(t, 10*time.Second, "the first worker's names' socket", func() bool { return exists(filepath.Join(dir, "io.berth.worker.0")) })
	w, err := New(Config{Masters: []string{fm.URL()}, Secret: testSecret, Host: "127.0.0.1",
		WorkDir: filepath.Join(base, "work-b"), HostDir: t.TempDir(), RunAs: runAsDynamic,
		userdbDir: dir, Cores: 1, MemoryMB: 512}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = w.Run(ctx)
	if !errors.Is(err, errSlotShared) || !strings.Contains(err.Error(), "--host-dir") {
		t.Fatalf("the second worker of slot 0: Run returned %v, want it refused naming --host-dir", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "io.berth.worker.0-*")); len(matches) != 0 {
		t.Errorf("the refused worker left its socket %v", matches)
	}
}

// A worker that cannot serve its names (here the directory is a file)
// could not see another worker of its slot number, so it does not start.
func TestAWorkerThatCannotServeItsNamesDoesNotStart(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	base := runAsBase(t)
	notDir := filepath.Join(t.TempDir(), "userdb")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Masters: []string{"https://127.0.0.1:1"}, Secret: testSecret, Host: "127.0.0.1",
		WorkDir: filepath.Join(base, "work"), HostDir: t.TempDir(), RunAs: runAsDynamic,
		userdbDir: notDir, Cores: 1, MemoryMB: 512}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = w.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot serve the names") || ctx.Err() != nil {
		t.Fatalf("Run returned %v (ctx %v), want a refusal to start saying it cannot serve the names", err, ctx.Err())
	}
}
