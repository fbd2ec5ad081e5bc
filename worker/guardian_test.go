package worker

import (
	"io"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// startGroup starts a sleep leading its own process group.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func TestGuardianKillsListedGroupsAtEOF(t *testing.T) {
	listed, unlisted := startGroup(t), startGroup(t)
	r, w := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- runGuardian(r) }()
	io.WriteString(w, "+"+strconv.Itoa(listed.Process.Pid)+"\n")
	io.WriteString(w, "+"+strconv.Itoa(unlisted.Process.Pid)+"\n")
	io.WriteString(w, "-"+strconv.Itoa(unlisted.Process.Pid)+"\nnoise\n+1\n+x\n")
	w.Close() // the worker died
	testproc.Receive(t, done, 5*time.Second, "the guardian to end at EOF")
	exited := make(chan error, 1)
	go func() { exited <- listed.Wait() }()
	err := testproc.Receive(t, exited, 5*time.Second, "the guardian to kill the listed group")
	if ws, ok := listed.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("listed group ended with %v", err)
	}
	if err := unlisted.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("unlisted group was killed: %v", err)
	}
}
