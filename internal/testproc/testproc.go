// Package testproc holds helpers for tests that run programs as processes:
// a buffer a process may write to while the test reads it, and the wait for
// a process's exit status.
package testproc

import (
	"bytes"
	"errors"
	"os/exec"
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

// ExitCode waits up to timeout for cmd (started) to exit and returns its
// exit status; the test fails if it does not exit in time.
func ExitCode(t testing.TB, cmd *exec.Cmd, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		t.Fatalf("%s %q did not exit within %s", cmd.Path, cmd.Args[1:], timeout)
		return -1
	}
}
