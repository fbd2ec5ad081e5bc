package failover

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLineTime(t *testing.T) {
	at, ok := lineTime(`time=2026-11-22T03:53:16.123Z level=INFO msg="entering candidate state" component=raft`)
	if !ok || at.Nanosecond() != 123000000 || at.Second() != 16 {
		t.Errorf("slog line: %v %v", at, ok)
	}
	at, ok = lineTime("# berthbench: m1 started 2026-11-22T03:53:16.5+00:00: /bin/master --node-id m1")
	if !ok || at.Nanosecond() != 500000000 {
		t.Errorf("header line: %v %v", at, ok)
	}
	if _, ok := lineTime("goroutine 1 [running]:"); ok {
		t.Error("a line without a time has one")
	}
}

func TestMergeLogs(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	b := filepath.Join(dir, "b.log")
	os.WriteFile(a, []byte("time=2026-01-01T00:00:01.000Z msg=a1\ntime=2026-01-01T00:00:03.000Z msg=a3\n  trace of a3\ntime=2026-01-01T00:00:09.000Z msg=a9\n"), 0o644)
	os.WriteFile(b, []byte("time=2026-01-01T00:00:00.000Z msg=b0\ntime=2026-01-01T00:00:02.000Z msg=b2\n"), 0o644)
	from := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	out := filepath.Join(dir, "merged")
	if err := mergeLogs([]string{a, b}, from, from.Add(5*time.Second), out); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Fields(l)
		msgs = append(msgs, f[0]+" "+f[len(f)-1])
	}
	want := []string{"a.log msg=a1", "b.log msg=b2", "a.log msg=a3", "a.log a3"}
	if !slices.Equal(msgs, want) {
		t.Errorf("merged:\n%s\nwant %v", data, want)
	}
}
