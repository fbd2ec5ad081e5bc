//go:build unix && !linux

package spawn

import "syscall"

// Attr puts a child in its own process group. Without Pdeathsig, children
// outlive a process killed with SIGKILL on this platform.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
