package worker

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// Who a failed start is owed to: the app's command (not found: 127) is
// the app's; a directory the worker could not make is the worker's, and
// only that counts against its health for every tenant.
func TestStartFailuresSayWhoTheyAreOwedTo(t *testing.T) {
	fm, w := startParallel(t, nil)
	w.mustCall(200, "POST", "/v1/executors", launchOf("app-missing", 0, []string{"/nonexistent/program"}, nil))
	last := fm.waitFinal(t, "app-missing", 0)
	if e := last[len(last)-1]; e.State != wire.ExecutorFailed || e.ExitCode == nil || *e.ExitCode != 127 || e.Cause != wire.CauseProcess {
		t.Errorf("a command that does not exist: %s %v cause %q (%s); want FAILED 127, the app's", e.State, e.ExitCode, e.Cause, e.Message)
	}
	// A path through a file (ENOTDIR from execve) is the app's mistake
	// too: three of them benched a worker for every tenant (issue 30).
	w.mustCall(200, "POST", "/v1/executors", launchOf("app-notdir", 0, []string{"/bin/sh/x"}, nil))
	last = fm.waitFinal(t, "app-notdir", 0)
	if e := last[len(last)-1]; e.State != wire.ExecutorFailed || e.ExitCode == nil || *e.ExitCode != 126 || e.Cause != wire.CauseProcess {
		t.Errorf("a path through a file: %s %v cause %q (%s); want FAILED 126, the app's", e.State, e.ExitCode, e.Cause, e.Message)
	}
	// The app's directory is a file: the worker cannot make the
	// executor's directory in it.
	if err := os.WriteFile(filepath.Join(w.Config().WorkDir, "app-blocked"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w.mustCall(200, "POST", "/v1/executors", launchOf("app-blocked", 0, helperCmd(t, "sleep"), nil))
	last = fm.waitFinal(t, "app-blocked", 0)
	if e := last[len(last)-1]; e.State != wire.ExecutorFailed || e.ExitCode != nil || e.Cause != wire.CauseWorker || !strings.Contains(e.Message, "preparing its directory") {
		t.Errorf("a directory the worker cannot make: %s %v cause %q (%s); want FAILED without an exit code, the worker's", e.State, e.ExitCode, e.Cause, e.Message)
	}
}

// An executor killed by a signal no part of berth sent (a person's kill
// -9) failed, but not by its own doing: cause signal; its own crash is its
// own.
func TestASignalFromOutsideIsNotTheAppsFailure(t *testing.T) {
	fm, w := startParallel(t, nil)
	pid := w.runSleeper("app-shot", 0)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	last := fm.waitFinal(t, "app-shot", 0)
	if e := last[len(last)-1]; e.State != wire.ExecutorFailed || e.Cause != wire.CauseSignal {
		t.Errorf("an executor killed -9 from outside: %s cause %q (%s), want FAILED, cause signal", e.State, e.Cause, e.Message)
	}
	w.mustCall(200, "POST", "/v1/executors", launchOf("app-crash", 0, []string{"/bin/sh", "-c", "kill -SEGV $$"}, nil))
	last = fm.waitFinal(t, "app-crash", 0)
	if e := last[len(last)-1]; e.State != wire.ExecutorFailed || e.Cause != wire.CauseProcess {
		t.Errorf("an executor that crashed: %s cause %q (%s), want FAILED, its own", e.State, e.Cause, e.Message)
	}
}
