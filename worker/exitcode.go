package worker

import (
	"fmt"
	"os"
	"syscall"
)

// exitCode is the status a shell would report for a finished process: the
// exit status, or 128+n for a death by signal n.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
	syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU",
	syscall.SIGURG: "SIGURG", syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ",
	syscall.SIGVTALRM: "SIGVTALRM", syscall.SIGPROF: "SIGPROF", syscall.SIGWINCH: "SIGWINCH",
	syscall.SIGIO: "SIGIO", syscall.SIGSYS: "SIGSYS",
}

// signalName is "SIGHUP" for 1, or "signal N" for a signal without a name.
func signalName(n int) string {
	if name, ok := signalNames[syscall.Signal(n)]; ok {
		return name
	}
	return fmt.Sprintf("signal %d", n)
}

// DescribeExitCode explains an exit code the way Spark's describeExitCode
// does for its executors, e.g. "exited with code 137: killed by SIGKILL
// (possibly out of memory)" or "exited with code 3".
func DescribeExitCode(code int) string {
	s := fmt.Sprintf("exited with code %d", code)
	if why := exitReason(code); why != "" {
		s += ": " + why
	}
	return s
}

// exitReason is why a process ends with code, "" when the code says nothing
// more than itself.
func exitReason(code int) string {
	switch code {
	case 126:
		return "command not executable"
	case 127:
		return "command not found"
	case 128 + int(syscall.SIGINT):
		return "interrupted by SIGINT"
	case 128 + int(syscall.SIGABRT):
		return "aborted by SIGABRT"
	case 128 + int(syscall.SIGKILL):
		return "killed by SIGKILL (possibly out of memory)"
	case 128 + int(syscall.SIGSEGV):
		return "segmentation fault (SIGSEGV)"
	case 128 + int(syscall.SIGTERM):
		return "terminated by SIGTERM"
	}
	if code > 128 && code <= 128+64 {
		return "killed by signal " + signalName(code-128)
	}
	return ""
}
