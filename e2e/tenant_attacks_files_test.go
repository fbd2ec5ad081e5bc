package e2e

// Files named on a command line that are not files (issue 30): /dev/zero
// as berth run --file grew the CLI to 9.4 GB in 40 s; a FIFO as --config
// hung the master, the worker and the CLI in open.

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNamedFilesThatAreNotFilesAreRefusedAtOnce(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "config.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		argv []string
		want string
	}{
		{"berth run --file /dev/zero", []string{bin.Berth, "--master", "http://127.0.0.1:1", "run", "--file", "/dev/zero"}, "a character device"},
		{"berth --config FIFO", []string{bin.Berth, "--config", fifo, "--master", "http://127.0.0.1:1", "status"}, "a FIFO"},
		{"master --config FIFO", []string{bin.Master, "--config", fifo}, "a FIFO"},
		{"worker --config FIFO", []string{bin.Worker, "--config", fifo}, "a FIFO"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
		cmd.Env = berthEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		took, killed := time.Since(start), ctx.Err() != nil
		cancel()
		var exit *exec.ExitError
		switch {
		case killed:
			t.Errorf("%s: still running after %s (killed): %s", c.name, took.Round(time.Millisecond), out.String())
		case !errors.As(err, &exit) || exit.ExitCode() == 0:
			t.Errorf("%s: %v, want a non-zero exit: %s", c.name, err, out.String())
		case !strings.Contains(out.String(), c.want) || !strings.Contains(out.String(), "not a regular file"):
			t.Errorf("%s: %q, want it to say the file is not a regular file (%s)", c.name, out.String(), c.want)
		case took > 5*time.Second:
			t.Errorf("%s: refused after %s, want at once", c.name, took.Round(time.Millisecond))
		}
	}
}
