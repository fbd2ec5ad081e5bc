package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/testcluster"
	"github.com/berth-cluster/berth/internal/testproc"
	"github.com/berth-cluster/berth/wire"
)

// A worker started with --run-as nobody runs an app's executors as nobody:
// through the real binaries, an executor cannot read the worker's secret
// file nor another app's directory.
func TestRunAsWorkerKeepsTenantsFromSecretsAndEachOther(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--run-as needs a root worker (CI runs as root)")
	}
	if _, err := user.Lookup("nobody"); err != nil {
		t.Skip("no user nobody here")
	}
	t.Parallel()
	base, err := os.MkdirTemp("", "berth-e2e-runas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o711)
	secretFile := filepath.Join(base, "secret") // as an operator keeps it: root's, 0600
	if err := os.WriteFile(secretFile, []byte("top-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(base, "work")
	mport, _ := testcluster.FreePort("127.0.0.1")
	master := fmt.Sprintf("http://127.0.0.1:%d", mport)
	devDaemon(t, "master", bin.Master, "--host", "127.0.0.1", "--port", fmt.Sprint(mport), "--recovery-mode", "none")
	devDaemon(t, "worker", bin.Worker, "--master", master, "--host", "127.0.0.1", "--port", "0", "--cores", "2", "--memory", "1g",
		"--work-dir", work, "--run-as", "nobody")

	register := func(name string, argv ...string) string {
		t.Helper()
		var id string
		testproc.Eventually(t, 20*time.Second, "registering "+name, func() error {
			a, err := call(http.MethodPost, master+wire.MasterAPI.RegisterApp.Path(), "", jsonOf(t, wire.AppDescription{
				Name: name, Command: argv, MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 32}))
			if err != nil || a.status != http.StatusOK {
				return fmt.Errorf("%v %d %s", err, a.status, a.body)
			}
			var s wire.Submitted
			if err := json.Unmarshal([]byte(a.body), &s); err != nil || s.ID == "" {
				return fmt.Errorf("answer %q: %v", a.body, err)
			}
			id = s.ID
			return nil
		})
		return id
	}
	first := register("first", "/bin/sh", "-c", "echo private > own.txt; exec sleep 600")
	own := filepath.Join(work, first, "0", "own.txt")
	testproc.Eventually(t, 20*time.Second, "the first app's file", func() error { _, err := os.Stat(own); return err })
	second := register("second", "/bin/sh", "-c", "id -un; cat "+secretFile+"; echo secret:$?; cat "+own+"; echo read:$?; exec sleep 600")
	var out string
	testproc.Eventually(t, 20*time.Second, "the second app's probe", func() error {
		data, err := os.ReadFile(filepath.Join(work, second, "0", "stdout"))
		out = string(data)
		if !strings.Contains(out, "read:") {
			return fmt.Errorf("stdout %q (%v)", out, err)
		}
		return nil
	})
	for _, want := range []string{"nobody\n", "secret:1\n", "read:1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the probe's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "top-secret") || strings.Contains(out, "private") {
		t.Errorf("an executor read what is not its own:\n%s", out)
	}
}
