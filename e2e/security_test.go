package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// A driver's credential, as the driver itself gets it, registers and
// manages its own apps and nothing else; an executor gets no credential
// at all; the operator secret reaches no process the worker starts.
func TestDriverCredentialIsScoped(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, workers: []string{"w1"}, cores: 4, memory: "1g"})
	ctx := callCtx(t, 30*time.Second)
	other, err := cl.c.RegisterApp(ctx, wire.AppDescription{Name: "another", Command: []string{"sleep", "3600"}, MemoryPerExecutorMB: 64, MaxCores: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The driver prints its environment and waits.
	driverID, err := cl.c.SubmitDriver(ctx, wire.DriverDescription{Command: []string{"sh", "-c", "env; exec sleep 3600"}, Cores: 1, MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	testproc.Eventually(t, 20*time.Second, "the driver's environment in its log", func() error {
		out, err := cl.c.DriverLogLines(ctx, driverID, "stdout", 100)
		if err != nil {
			return err
		}
		env = map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = v
			}
		}
		if env[wire.EnvToken] == "" {
			return fmt.Errorf("no %s yet in %q", wire.EnvToken, out)
		}
		return nil
	})
	if _, leaked := env[wire.EnvSecret]; leaked || strings.Contains(fmt.Sprint(env), secret) {
		t.Fatalf("the driver's environment holds the operator secret: %v", env)
	}
	if env[wire.EnvTLSCAFile] == "" {
		t.Errorf("the driver is not told the CA to verify the masters with: %v", env)
	}
	token, leader := env[wire.EnvToken], cl.master("m1").URL

	as := func(method, path string, body []byte) answer {
		t.Helper()
		a, err := call(method, leader+path, token, body)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	mine := as(http.MethodPost, "/v1/apps", jsonOf(t, wire.AppDescription{Name: "mine", Command: []string{"sh", "-c", "env; exec sleep 3600"}, MemoryPerExecutorMB: 64, MaxCores: 1}))
	var sub wire.Submitted
	if mine.status != http.StatusOK || json.Unmarshal([]byte(mine.body), &sub) != nil {
		t.Fatalf("the driver registering its app: %d %s", mine.status, mine.body)
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/v1/apps/" + sub.ID, http.StatusOK},
		{http.MethodDelete, "/v1/apps/" + other, http.StatusForbidden},
		{http.MethodGet, "/v1/apps/" + other, http.StatusForbidden},
		{http.MethodGet, "/v1/cluster", http.StatusForbidden},
		{http.MethodDelete, "/v1/drivers/" + driverID, http.StatusForbidden},
		{http.MethodPost, "/v1/workers/w1/decommission", http.StatusForbidden},
	} {
		if a := as(c.method, c.path, nil); a.status != c.want {
			t.Errorf("driver credential %s %s: %d %s, want %d", c.method, c.path, a.status, a.body, c.want)
		}
	}
	if a := as(http.MethodPost, "/v1/drivers", jsonOf(t, wire.DriverDescription{Command: []string{"id"}, Cores: 1, MemoryMB: 64})); a.status != http.StatusForbidden {
		t.Errorf("driver credential submitting a driver: %d %s", a.status, a.body)
	}
	if st, err := cl.c.App(ctx, other); err != nil || st.State == wire.AppKilled {
		t.Errorf("the other app after the driver's attempts: %+v %v", st, err)
	}

	// The app's executor: no credential, no secret.
	cl.appWhen(sub.ID, 20*time.Second, "its executor running", func(a wire.AppStatus) error {
		if len(executorsIn(a, wire.ExecutorRunning)) == 0 {
			return fmt.Errorf("executors %s", describeExecs(a))
		}
		return nil
	})
	testproc.Eventually(t, 10*time.Second, "the executor's environment", func() error {
		out, err := exec.Command("sh", "-c", "cat "+cl.worker("w1").WorkDir+"/"+sub.ID+"/*/stdout").Output()
		if err != nil || !strings.Contains(string(out), wire.EnvAppID+"=") {
			return fmt.Errorf("no environment yet: %v", err)
		}
		if strings.Contains(string(out), wire.EnvToken) || strings.Contains(string(out), secret) {
			t.Errorf("the executor holds a credential:\n%s", out)
		}
		return nil
	})

	// Once the driver ends, its credential is refused.
	if _, err := cl.c.KillDriver(ctx, driverID); err != nil {
		t.Fatal(err)
	}
	cl.driverWhen(driverID, 20*time.Second, "killed", func(d wire.DriverStatus) error {
		if d.State != wire.DriverKilled {
			return fmt.Errorf("state %s", d.State)
		}
		return nil
	})
	if a := as(http.MethodGet, "/v1/apps/"+sub.ID, nil); a.status != http.StatusUnauthorized {
		t.Errorf("credential of an ended driver: %d %s", a.status, a.body)
	}
}

// A worker's certificate speaks for its own worker id only, and commands
// no worker: those are a master's.
func TestWorkerCertificateSpeaksOnlyForItself(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, workers: []string{"w1"}, cores: 2, memory: "1g"})
	w1, err := security.Load(security.Files{CA: bin.PKI.CAFile(),
		Cert: filepath.Join(bin.PKI.Dir, "w1.pem"), Key: filepath.Join(bin.PKI.Dir, "w1-key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: w1.ClientConfig()}}
	post := func(url string, body any) int {
		t.Helper()
		resp, err := hc.Post(url, "application/json", strings.NewReader(string(jsonOf(t, body))))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	master, worker := cl.master("m1").URL, cl.worker("w1").URL
	impostor := wire.RegisterWorker{ID: "w2", Host: "127.0.0.1", Port: 1, Cores: 64, MemoryMB: 1 << 16, Address: "https://127.0.0.1:1", Incarnation: "x"}
	if code := post(master+"/v1/workers", impostor); code != http.StatusForbidden {
		t.Errorf("w1's certificate registering w2: %d", code)
	}
	if code := post(master+"/v1/workers/w2/heartbeat", wire.Heartbeat{}); code != http.StatusForbidden {
		t.Errorf("w1's certificate heartbeating for w2: %d", code)
	}
	launch := wire.LaunchExecutor{Epoch: 1 << 40, MasterURL: master, AppID: "app-x", ExecutorID: 1, Process: wire.Process{Command: []string{"id"}, Cores: 1, MemoryMB: 64}}
	if code := post(worker+"/v1/executors", launch); code != http.StatusForbidden {
		t.Errorf("a worker certificate commanding a worker: %d", code)
	}
	// Without any certificate or secret: nobody.
	if a, err := call(http.MethodPost, worker+"/v1/executors", "", jsonOf(t, launch)); err != nil || a.status != http.StatusUnauthorized {
		t.Errorf("an anonymous command to a worker: %v %+v", err, a)
	}
	if st := cl.mustStatus(); len(st.Workers) != 1 {
		t.Errorf("workers after the attempts: %+v", st.Workers)
	}
}
