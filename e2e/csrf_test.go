package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// devDaemon starts path without any credential (the loopback dev mode) and
// waits for its /healthz.
func devDaemon(t *testing.T, name, path string, args ...string) *testcluster.Proc {
	t.Helper()
	dir := t.TempDir()
	dumpLogsOnFailure(t, dir)
	p, err := testcluster.Start(t, name, path, filepath.Join(dir, name+".log"), args,
		testcluster.ProcOptions{CleanEnv: true, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rawPost sends one POST as a browser could be made to: its body, content
// type, Origin and Host as given. It returns the status.
func rawPost(t *testing.T, url, contentType, origin, host, body string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req) // plain HTTP: the dev mode has no TLS
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// In the loopback dev mode (no secret, no TLS) a web page must not be able
// to run anything through the master or a worker: the shapes of request a
// page can make a browser send (text/plain and form bodies, a cross-site
// Origin, a rebound DNS name as Host) are refused with 403 and run nothing.
// The same request as a local tool sends it runs, so the test can tell.
func TestLoopbackDevModeRefusesBrowserRequests(t *testing.T) {
	t.Parallel()
	mport, err := testcluster.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	master := fmt.Sprintf("http://127.0.0.1:%d", mport)
	devDaemon(t, "master", bin.Master, "--host", "127.0.0.1", "--port", fmt.Sprint(mport), "--recovery-mode", "none", "--worker-timeout", "5s")
	wport, err := testcluster.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	worker := fmt.Sprintf("http://127.0.0.1:%d", wport)
	wp := devDaemon(t, "worker", bin.Worker, "--master", master, "--host", "127.0.0.1", "--port", fmt.Sprint(wport), "--cores", "2", "--memory", "2g", "--work-dir", t.TempDir())
	testproc.Eventually(t, 20*time.Second, "the worker ALIVE", func() error {
		a, err := call(http.MethodGet, master+wire.MasterAPI.Cluster.Path(), "", nil)
		if err != nil || !strings.Contains(a.body, `"state":"ALIVE"`) {
			return fmt.Errorf("status %v %s", err, a.body)
		}
		return nil
	})

	marks := t.TempDir()
	ran := func(name string) bool { _, err := os.Stat(filepath.Join(marks, name)); return err == nil }
	driver := func(name string) string {
		return string(jsonOf(t, wire.DriverDescription{Command: []string{"touch", filepath.Join(marks, name)}, Cores: 1, MemoryMB: 16}))
	}
	executor := func(name string) string {
		return string(jsonOf(t, wire.LaunchExecutor{Epoch: 1, AppID: "app-csrf", ExecutorID: len(name), Process: wire.Process{
			Command: []string{"touch", filepath.Join(marks, name)}, Cores: 1, MemoryMB: 16}}))
	}
	shapes := []struct {
		name, contentType, origin, host string
	}{
		{"text-plain", "text/plain", "", ""},
		{"form", "application/x-www-form-urlencoded", "", ""},
		{"cross-origin", "application/json", "http://evil.example", ""},
		{"null-origin", "application/json", "null", ""},
		{"rebound-host", "application/json", "", fmt.Sprintf("evil.example:%d", mport)},
	}
	for _, s := range shapes {
		if code := rawPost(t, master+wire.MasterAPI.SubmitDriver.Path(), s.contentType, s.origin, s.host, driver("master-"+s.name)); code != http.StatusForbidden {
			t.Errorf("master, %s: %d, want 403", s.name, code)
		}
		host := s.host
		if host != "" {
			host = fmt.Sprintf("evil.example:%d", wport)
		}
		if code := rawPost(t, worker+wire.WorkerAPI.LaunchExecutor.Path(), s.contentType, s.origin, host, executor("worker-"+s.name)); code != http.StatusForbidden {
			t.Errorf("worker, %s: %d, want 403", s.name, code)
		}
	}
	// The controls: a local tool's request runs its command.
	if code := rawPost(t, master+wire.MasterAPI.SubmitDriver.Path(), "application/json", "", "", driver("master-control")); code != http.StatusOK {
		t.Fatalf("master control: %d", code)
	}
	testproc.Eventually(t, 20*time.Second, "the control driver to run", func() error {
		if !ran("master-control") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if code := rawPost(t, worker+wire.WorkerAPI.LaunchExecutor.Path(), "application/json", "", "", executor("worker-control")); code != http.StatusOK {
		t.Fatalf("worker control: %d", code)
	}
	// The master kills an executor it did not place, perhaps before its
	// command runs: the worker's log says it started.
	testproc.Eventually(t, 20*time.Second, "the control executor to start", func() error {
		if n := logCount(wp, `msg=started app=app-csrf `); n != 1 {
			return fmt.Errorf("%d executors started", n)
		}
		return nil
	})
	// The worker's own page, without a sign-in in the dev mode, links to
	// the master's.
	page, err := call(http.MethodGet, worker+"/ui/", "", nil)
	if err != nil || page.status != http.StatusOK || !strings.Contains(page.body, "Processes") || !strings.Contains(page.body, master+"/ui/") {
		t.Errorf("the worker's page: %v %d %q", err, page.status, page.body)
	}
	st, err := call(http.MethodGet, master+wire.MasterAPI.Cluster.Path(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(st.body, `"id":"driver-`); n != 1 {
		t.Errorf("%d drivers listed, want only the control: %s", n, st.body)
	}
	for _, s := range shapes {
		if ran("master-"+s.name) || ran("worker-"+s.name) {
			t.Errorf("%s: a command ran", s.name)
		}
	}
}
