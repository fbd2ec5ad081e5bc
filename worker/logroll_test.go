package worker

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

func TestRollingLogRollsBySizeAndKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	d, err := openRootDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, err := openRolling(d, "stdout", 10, 2, -1)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for i := range 12 {
		line := fmt.Sprintf("line %02d\n", i) // 8 bytes: one line a file
		all.WriteString(line)
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "stdout*"))
	if len(files) != 3 {
		t.Errorf("files %v, want stdout, stdout.1, stdout.2", files)
	}
	for name, want := range map[string]string{"stdout": "line 11\n", "stdout.1": "line 10\n", "stdout.2": "line 09\n"} {
		if data, _ := os.ReadFile(filepath.Join(dir, name)); string(data) != want {
			t.Errorf("%s: %q, want %q", name, data, want)
		}
	}
	r, closeAll, err := openLogStream(d, "stdout", -1)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := readAll(r)
	closeAll()
	if data != "line 09\nline 10\nline 11\n" {
		t.Errorf("read across the files: %q", data)
	}
	r, closeAll, _ = openLogStream(d, "stdout", 12)
	data, _ = readAll(r)
	closeAll()
	if data != " 10\nline 11\n" {
		t.Errorf("the last 12 bytes across the files: %q", data)
	}
}

// A process that writes more than --log-max-size gets its output rolled;
// the log API reads the kept files back whole, oldest first.
func TestExecutorLogsRollAndReadBackWhole(t *testing.T) {
	_, tw := startParallel(t, func(c *Config) { c.LogMaxSize = 4096; c.LogMaxFiles = 100 })
	// 500 numbered lines of 24 bytes: about 12 KB, three files or more.
	tw.launchExecutor("app-log", 0, []string{"/bin/sh", "-c", `i=0; while [ $i -lt 500 ]; do printf 'line %05d of the output\n' $i; i=$((i+1)); done`})
	testproc.Eventually(t, 10*time.Second, "the executor to end", func() bool {
		for _, e := range tw.state().Executors {
			if e.AppID == "app-log" {
				return false
			}
		}
		return true
	})
	rolled, _ := filepath.Glob(filepath.Join(tw.execDir("app-log", 0), "stdout.*"))
	if len(rolled) < 2 {
		t.Errorf("rolled files %v, want at least 2", rolled)
	}
	for _, f := range append(rolled, filepath.Join(tw.execDir("app-log", 0), "stdout")) {
		if st, err := os.Stat(f); err != nil || st.Size() > 4096 {
			t.Errorf("%s: %v bytes (%v), want at most 4096", f, st.Size(), err)
		}
	}
	_, body := tw.call("GET", "/v1/executors/app-log/0/logs/stdout", nil)
	var want strings.Builder
	for i := range 500 {
		fmt.Fprintf(&want, "line %05d of the output\n", i)
	}
	if body != want.String() {
		t.Errorf("the log read back: %d bytes, want %d; starts %q", len(body), want.Len(), body[:min(len(body), 60)])
	}
	_, tail := tw.call("GET", "/v1/executors/app-log/0/logs/stdout?tail=50", nil)
	if tail != "line 00498 of the output\nline 00499 of the output\n" {
		t.Errorf("tail: %q", tail)
	}
}

func readAll(r interface{ Read([]byte) (int, error) }) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1024)
	for {
		n, err := r.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String(), nil
		}
	}
}

// flakyDisk fails every write while full is set, as a full disk does.
type flakyDisk struct {
	full bool
	got  bytes.Buffer
}

func (f *flakyDisk) Write(p []byte) (int, error) {
	if f.full {
		return 0, syscall.ENOSPC
	}
	return f.got.Write(p)
}

// A full disk never stops the copy of a process's output (the process
// would block on its pipe, or die of SIGPIPE): what cannot be written is
// dropped, and once writes work again a line says how much.
func TestOutputKeepsDrainingWhileTheDiskIsFull(t *testing.T) {
	disk := &flakyDisk{}
	k := &keepDraining{log: disk}
	write := func(s string) {
		t.Helper()
		if n, err := k.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want all of it taken, no error", s, n, err)
		}
	}
	write("before\n")
	disk.full = true
	write("lost one\n")
	write("lost two\n")
	disk.full = false
	write("after\n")
	want := "before\n\n[berth: 18 bytes of output dropped: the worker could not write them]\nafter\n"
	if got := disk.got.String(); got != want {
		t.Errorf("the log reads %q, want %q", got, want)
	}
}
