package worker

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDescribeExitCode(t *testing.T) {
	t.Parallel()
	cases := map[int]string{
		0:   "exited with code 0",
		3:   "exited with code 3",
		126: "exited with code 126: command not executable",
		127: "exited with code 127: command not found",
		130: "exited with code 130: interrupted by SIGINT",
		134: "exited with code 134: aborted by SIGABRT",
		137: "exited with code 137: killed by SIGKILL (possibly out of memory)",
		139: "exited with code 139: segmentation fault (SIGSEGV)",
		143: "exited with code 143: terminated by SIGTERM",
		129: "exited with code 129: killed by signal SIGHUP",
		141: "exited with code 141: killed by signal SIGPIPE",
		170: "exited with code 170: killed by signal signal 42",
		255: "exited with code 255",
	}
	for code, want := range cases {
		if got := DescribeExitCode(code); got != want {
			t.Errorf("%d: %q, want %q", code, got, want)
		}
	}
}

func TestCheckID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"app-20240101000000-0001", "a", "A.b_c-9", "driver-1"} {
		if err := checkID("id", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../a", "a/b", "a..b", "-a", "_a", ".a", "a b", "a\x00", "é", "a\\b", strings.Repeat("x", 201)} {
		if err := checkID("id", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	base, limit := 100*time.Millisecond, 2*time.Second
	for attempt := 1; attempt < 40; attempt++ {
		want := base << min(attempt-1, 20)
		want = min(want, limit)
		for range 20 {
			if d := backoff(attempt, base, limit); d < want/2 || d > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
}

func TestNormalizeMaster(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"http://a:1":    "http://a:1",
		"http://a:1/":   "http://a:1",
		"http://a":      "http://a:7077", // the master's default port
		"http://a:1/p/": "",              // the API is at the root
		"/v1/workers":   "",
		"":              "",
		"a:1":           "",
	}
	for in, want := range cases {
		if got := normalizeMaster(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestMemTotal(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(p, []byte("MemFree: 1 kB\nMemTotal:       16318204 kB\n"), 0o644)
	if mb, err := memTotalMB(p); err != nil || mb != 15935 {
		t.Errorf("%d %v", mb, err)
	}
	if d := DefaultMemoryMB(); d < 1024 {
		t.Errorf("default memory %d", d)
	}
}

func TestDefaultID(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 3, 5, 7, 8, 9, 0, time.UTC)
	if got := defaultID(now, "10.0.0.5", 4242); got != "worker-20240305070809-10.0.0.5-4242" {
		t.Error(got)
	}
	if got := defaultID(now, "::1", 1); checkID("id", got) != nil {
		t.Errorf("%q is not a safe id", got)
	}
}

func TestConfigErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	ok := Config{Masters: []string{"http://127.0.0.1:7077"}, WorkDir: t.TempDir(), HostDir: t.TempDir()}
	cases := []struct {
		mod  func(*Config)
		flag string
	}{
		{func(c *Config) { c.Masters = nil }, "--master"},
		{func(c *Config) { c.Masters = []string{"127.0.0.1:7077"} }, "--master"},
		{func(c *Config) { c.Cores = -1 }, "--cores"},
		{func(c *Config) { c.Cores = 1 << 20 }, "--cores"},
		{func(c *Config) { c.MemoryMB = -1 }, "--memory"},
		{func(c *Config) { c.WorkDir = filepath.Join(file, "sub") }, "--work-dir"},
		{func(c *Config) { c.Port = 70000 }, "--port"},
		{func(c *Config) { c.ID = "a/b" }, "--id"},
		{func(c *Config) { c.KillGrace = -time.Second }, "--kill-grace"},
		{func(c *Config) { c.CleanupInterval = -time.Second }, "--cleanup-interval"},
		{func(c *Config) { c.Host = "10.1.2.3" }, "--host"},
	}
	for _, c := range cases {
		cfg := ok
		c.mod(&cfg)
		if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%s: %v", c.flag, err)
		}
	}
	w, err := New(ok, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := w.Config(); c.Cores < 1 || c.MemoryMB < 1024 || c.KillGrace != DefaultKillGrace || c.Host != "127.0.0.1" {
		t.Errorf("defaults %+v", c)
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "prog"), nil, 0o755)
	os.WriteFile(filepath.Join(dir, "data"), nil, 0o644)
	if p, err := lookPath("prog", "relative:"+dir); err != nil || p != filepath.Join(dir, "prog") {
		t.Errorf("%q %v", p, err)
	}
	if p, err := lookPath("data", dir); err != nil || p != filepath.Join(dir, "data") {
		t.Errorf("not executable: %q %v (execve then says EACCES: 126)", p, err)
	}
	if _, err := lookPath("prog", "relative"); startFailure(err) != 127 {
		t.Errorf("relative PATH entries must be skipped: %v", err)
	}
	if p, _ := lookPath("./x/y", ""); p != "./x/y" {
		t.Errorf("a path is kept: %q", p)
	}
}

func TestSetEnv(t *testing.T) {
	t.Parallel()
	if got := setEnv([]string{"A=1", "HOME=/root", "B=2"}, "HOME", "/nonexistent"); fmt.Sprint(got) != "[A=1 B=2 HOME=/nonexistent]" {
		t.Errorf("setEnv: %v", got)
	}
}

func TestSessionRegistrationStates(t *testing.T) {
	t.Parallel()
	s := newSession()
	if m, _, ready, ctx := s.current(); m != "" || ready == nil || ctx.Err() == nil {
		t.Fatal("a new session is registered")
	}
	s.reconnect("http://b:1") // before the registration completes
	s.registered("http://a:1")
	s.registered("http://a:1") // must not close ready twice
	m, gen, ready, regCtx := s.current()
	if m != "http://a:1" || ready != nil || regCtx.Err() != nil {
		t.Fatalf("current %q %v", m, ready)
	}
	if relook, hint := s.take(); !relook || hint != "http://b:1" {
		t.Errorf("pending relook %v %q", relook, hint)
	}
	s.lost(gen-1, "") // about an older registration: ignored
	if m, _, _, _ := s.current(); m == "" || regCtx.Err() != nil {
		t.Error("a stale loss unregistered the session")
	}
	relooked := s.relookSignal()
	s.lost(gen, "http://c:1")
	if regCtx.Err() == nil || relooked.Err() == nil {
		t.Error("losing the registration did not cancel what waits on its master")
	}
	_, _, ready, _ = s.current()
	select {
	case <-ready:
		t.Error("ready while unregistered")
	default:
	}
	if _, hint := s.take(); hint != "http://c:1" {
		t.Errorf("hint %q", hint)
	}
	s.registered("http://c:1")
	select {
	case <-ready:
	default:
		t.Error("ready not closed by the registration")
	}
}

// A repeated launch reads the existing process's state while its runner
// changes it: under -race this fails if the read is not guarded (CI caught
// it once, as a timing-dependent race in TestLaunchIsIdempotent).
func TestRepeatedLaunchReadsStateUnderLock(t *testing.T) {
	t.Parallel()
	w := &Worker{procs: newProcTable(), log: slog.New(slog.DiscardHandler)}
	p := &proc{kind: kindExecutor, appID: "app-1", execID: 0, state: "LAUNCHING"}
	if _, added := w.procs.add(p); !added {
		t.Fatal("first add refused")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			w.procs.setState(p, "RUNNING")
		}
	}()
	for range 200 {
		dup := &proc{kind: kindExecutor, appID: "app-1", execID: 0}
		if err := w.launch(dup); err != nil {
			t.Fatalf("repeated launch: %v", err)
		}
	}
	<-done
	if got := w.procs.executor("app-1", 0); got != p {
		t.Errorf("the repeated launch replaced the process: %p, want %p", got, p)
	}
}
