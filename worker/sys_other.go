//go:build unix && !linux

package worker

import "syscall"

// sysProcAttr puts a child in its own process group. Without Pdeathsig,
// children outlive a worker killed with SIGKILL on this platform.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited returns at once: Wait reaps and the runner clears the process
// right after, leaving a tiny window in which its pid could be recycled.
func waitExited(int) error { return nil }
