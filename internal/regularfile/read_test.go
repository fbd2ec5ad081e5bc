package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadTakesRegularFilesOnlyAndBoundsThem(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(ok, 100); err != nil || string(data) != `{"a":1}` {
		t.Fatalf("a regular file: %q %v", data, err)
	}
	if _, err := Read(ok, 3); err == nil || !strings.Contains(err.Error(), "larger than 3 bytes") {
		t.Errorf("over the bound: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, what := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device", dir: "a directory"} {
		done := make(chan error, 1)
		go func() { _, err := Read(path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), what) {
				t.Errorf("%s: %v, want it refused as %s", path, err, what)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still reading after 5 s", path)
		}
	}
}
