//go:build linux

package spawn

import "syscall"

// Attr puts a child in its own process group (so that a kill of the group
// reaches what it started, and a Ctrl-C at this process's terminal does
// not) and has the kernel SIGKILL it when the thread that started it dies:
// with Start, when this process dies.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
