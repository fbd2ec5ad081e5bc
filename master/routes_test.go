package master

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// runMaster runs master m1 with cfg on a loopback port until the test ends,
// and returns it with its base URL (cfg.Advertise is set to it). A nil
// engine is an empty Memory; a nil agent elects m1 at once.
func runMaster(t *testing.T, cfg Config, engine persistence.Engine, agent election.Agent) (*Master, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ID, cfg.Advertise = "m1", "http://"+ln.Addr().String()
	if engine == nil {
		engine = persistence.NewMemory()
	}
	if agent == nil {
		agent = election.NewSingle(cfg.ID)
	}
	repl, _ := engine.(Replication) // a Raft engine under test replicates
	m, err := New(cfg, engine, repl, agent, discardLogger(), nil)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	go m.Run(t.Context(), ln)
	return m, cfg.Advertise
}

// Every worker route answers 2xx through the real HTTP stack: the loop's
// replies match the types the routes declare (a mismatch is a 500).
func TestWorkerRoutesAnswerTheirDeclaredTypes(t *testing.T) {
	_, base := runMaster(t, Config{WorkerTimeout: time.Minute}, nil, nil)
	api := wire.MasterAPI
	// A worker that accepts every command and tells the test of launches.
	launched := make(chan wire.LaunchExecutor, 4)
	fakeWorker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.WorkerAPI.LaunchExecutor.Pattern {
			var l wire.LaunchExecutor
			json.NewDecoder(r.Body).Decode(&l)
			launched <- l
		}
		w.Write([]byte("{}"))
	}))
	defer fakeWorker.Close()
	post := func(e wire.Endpoint, body any, params ...string) (int, []byte) {
		t.Helper()
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest(e.Method, base+e.Path(params...), bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		return resp.StatusCode, out.Bytes()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := post(api.RegisterWorker.Endpoint, wire.RegisterWorker{ID: "w1", Host: "127.0.0.1", Port: fakeWorker.Listener.Addr().(*net.TCPAddr).Port, Address: fakeWorker.URL, Cores: 2, MemoryMB: 4096})
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registration: %d %s", status, body)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline: the master is electing itself
	}
	for _, c := range []struct {
		e    wire.Endpoint
		body any
	}{
		{api.WorkerHeartbeat.Endpoint, wire.Heartbeat{}},
		{api.LatestState.Endpoint, wire.WorkerLatestState{WorkerID: "w1"}},
	} {
		if status, body := post(c.e, c.body, "w1"); status != http.StatusOK {
			t.Errorf("%s: %d %s", c.e.Mux(), status, body)
		}
	}
	// An executor's life: launched on w1, reported RUNNING, then EXITED.
	if status, body := post(api.RegisterApp.Endpoint, wire.AppDescription{Command: []string{"x"}, MaxCores: 1}); status != http.StatusOK {
		t.Fatalf("app: %d %s", status, body)
	}
	var l wire.LaunchExecutor
	select {
	case l = <-launched:
	case <-time.After(10 * time.Second):
		t.Fatal("no executor launched")
	}
	zero := 0
	for _, st := range []wire.ExecutorStateChanged{
		{AppID: l.AppID, ExecutorID: l.ExecutorID, State: wire.ExecutorRunning},
		{AppID: l.AppID, ExecutorID: l.ExecutorID, State: wire.ExecutorExited, ExitCode: &zero},
	} {
		if status, body := post(api.ExecutorStateReport.Endpoint, st, "w1"); status != http.StatusOK {
			t.Errorf("report %s: %d %s", st.State, status, body)
		}
	}
	if status, body := post(api.Decommission.Endpoint, nil, "w1"); status != http.StatusOK {
		t.Errorf("decommission: %d %s", status, body)
	}
	// A report about an executor the master does not know: 404 with its code.
	status, body := post(api.ExecutorStateReport.Endpoint, wire.ExecutorStateChanged{AppID: "app-x", ExecutorID: 0, State: wire.ExecutorRunning}, "w1")
	var e wire.Error
	json.Unmarshal(body, &e)
	if status != http.StatusNotFound || e.Code != wire.CodeUnknownExecutor {
		t.Errorf("report of an unknown executor: %d %s", status, body)
	}
}
