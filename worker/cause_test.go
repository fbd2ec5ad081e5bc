package worker

import (
	"os"
	"path/filepath"
	"strings"
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
