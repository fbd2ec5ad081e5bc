package worker

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// TestStartFailureBlamesThePathNotTheWorker: every errno execve gives
// about the path or file an app named is the app's (126 or 127, as a
// shell reports it); only the worker running short of what a fork needs
// has no exit code, and so is the worker's (issue 30: a tenant that named
// /bin/sh/x three times benched the worker for everyone).
func TestStartFailureBlamesThePathNotTheWorker(t *testing.T) {
	t.Parallel()
	pathErr := func(e syscall.Errno) error { return &fs.PathError{Op: "fork/exec", Path: "/app/x", Err: e} }
	cases := map[error]int{
		pathErr(syscall.ENOENT):                127,
		pathErr(syscall.EACCES):                126,
		pathErr(syscall.ENOEXEC):               126,
		pathErr(syscall.ENOTDIR):               126,
		pathErr(syscall.ELOOP):                 126,
		pathErr(syscall.ENAMETOOLONG):          126,
		pathErr(syscall.ETXTBSY):               126,
		pathErr(syscall.E2BIG):                 126,
		pathErr(syscall.EAGAIN):                0,
		pathErr(syscall.ENOMEM):                0,
		pathErr(syscall.EMFILE):                0,
		fmt.Errorf("cgroup: %w", os.ErrClosed): 0, // no errno: not the command's
	}
	for err, want := range cases {
		if got := startFailure(err); got != want {
			t.Errorf("%v: %d, want %d", err, got, want)
		}
	}
}
