// Package testproc holds helpers that tests of several packages share: a
// buffer a process may write to while the test reads it, running a built
// program and reading its exit status, waiting with a deadline for a
// condition or a channel, and the pieces of the fake HTTP masters the tests
// talk to.
package testproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe to read while a process writes to it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Alive reports whether pid runs; a zombie (dead, not yet reaped by its
// parent) counts as dead. Linux only: it reads /proc.
func Alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// ExitCode waits up to timeout for cmd (started) to exit and returns its
// exit status; the test fails if it does not exit in time (cmd is then
// killed: a test's process must not outlive it).
func ExitCode(t testing.TB, cmd *exec.Cmd, timeout time.Duration) int {
	t.Helper()
	code, err := wait(cmd, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// errTimedOut says a process outlived the time it was given.
var errTimedOut = errors.New("did not exit in time")

// wait waits up to timeout for cmd (started) to exit and returns its exit
// status (-1 if a signal killed it), or why Wait failed. A cmd still
// running at the timeout is killed and reaped, so that its output is
// complete and no longer written to, and the error wraps errTimedOut.
func wait(cmd *exec.Cmd, timeout time.Duration) (int, error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), nil
		}
		return 0, err
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		return -1, fmt.Errorf("%s %q %w within %s", cmd.Path, cmd.Args[1:], errTimedOut, timeout)
	}
}
