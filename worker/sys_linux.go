//go:build linux

package worker

import (
	"syscall"
	"unsafe"
)

// waitExited blocks until process pid has exited, without reaping it
// (waitid with WNOWAIT), so that its pid stays ours until Wait.
func waitExited(pid int) error {
	const pPID = 1     // P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}
