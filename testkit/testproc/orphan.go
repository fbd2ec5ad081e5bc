package testproc

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ChildOutlivesKilledParent runs this test binary again as a parent (env
// tells its TestMain to start a child and print the child's pid on a line),
// SIGKILLs that parent, and fails the test if the child is still alive 10 s
// later: what dies with its parent must die even when the parent never
// cleans up. The child is killed at the end either way.
func ChildOutlivesKilledParent(t *testing.T, env ...string) {
	t.Helper()
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), env...)
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the child's pid: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if Alive(child) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
	})
	if !Alive(child) {
		t.Fatalf("the child %d is not running before its parent is killed", child)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	Eventually(t, 10*time.Second, "the child to die with its SIGKILLed parent", func() bool { return !Alive(child) })
}
