package load

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// TestSimulatedWorkerCommands drives one simulated worker's API directly,
// with a stub master that takes the executor-state reports.
func TestSimulatedWorkerCommands(t *testing.T) {
	var mu sync.Mutex
	var reports []wire.ExecutorStateChanged
	// Any other request gets the mux's 404 and counts as a state error.
	mux := http.NewServeMux()
	mux.HandleFunc(wire.MasterAPI.ExecutorStateReport.Mux(), func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":"secret"}`, http.StatusUnauthorized)
			return
		}
		if id := r.PathValue("id"); id != "t-00001" {
			http.Error(w, `{"error":"unexpected worker `+id+`"}`, http.StatusBadRequest)
			return
		}
		var m wire.ExecutorStateChanged
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		reports = append(reports, m)
		mu.Unlock()
		if m.State == wire.ExecutorKilled {
			// As the master: a killed executor is already forgotten.
			http.Error(w, `{"error":"unknown executor"}`, http.StatusNotFound)
			return
		}
		w.Write([]byte("{}"))
	})
	stub := httptest.NewServer(mux)
	defer stub.Close()
	f, err := newFleet(fleetConfig{Workers: 3, Cores: 4, MemoryMB: 1024, IDPrefix: "t", PortBase: 30000, Secret: "k"},
		newMasterClient(stub.URL, "k", 4, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	w := f.ws[1]
	w.epoch.Store(5)

	post := func(e wire.Endpoint, secret string, body any) (int, string) {
		t.Helper()
		var data []byte
		if s, ok := body.(string); ok {
			data = []byte(s)
		} else {
			data, _ = json.Marshal(body)
		}
		req, _ := http.NewRequest(e.Method, w.addr+e.Path(), bytes.NewReader(data))
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return -1, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	api := wire.WorkerAPI
	launch := wire.LaunchExecutor{Epoch: 5, AppID: "app-1", ExecutorID: 3, Process: wire.Process{Command: []string{"x"}, Cores: 2, MemoryMB: 256}}

	if code, _ := post(api.LaunchExecutor.Endpoint, "", launch); code != http.StatusUnauthorized {
		t.Errorf("no secret: %d", code)
	}
	stale := launch
	stale.Epoch = 4
	if code, body := post(api.LaunchExecutor.Endpoint, "k", stale); code != http.StatusConflict || !strings.Contains(body, `"epoch":5`) || !strings.Contains(body, `"code":"stale_epoch"`) {
		t.Errorf("stale epoch: %d %s", code, body)
	}
	if code, _ := post(api.LaunchExecutor.Endpoint, "k", `{"epoch":5,"appId":"a","bogus":1}`); code != http.StatusBadRequest {
		t.Errorf("unknown field: %d", code)
	}
	if code, _ := post(wire.Endpoint{Method: http.MethodPost, Pattern: "/v1/no-such-route"}, "k", launch); code != http.StatusNotFound {
		t.Errorf("no such worker: %d", code)
	}
	if code, body := post(api.LaunchExecutor.Endpoint, "k", launch); code != http.StatusOK {
		t.Fatalf("launch: %d %s", code, body)
	}
	if code, _ := post(api.LaunchExecutor.Endpoint, "k", launch); code != http.StatusOK || f.n.dupLaunches.Load() != 1 {
		t.Errorf("a repeated launch is acknowledged and counted once: %d, dups %d", code, f.n.dupLaunches.Load())
	}
	if !poll.Within(context.Background(), 5*time.Second, pollEvery, func() bool { return f.n.running.Load() == 1 }) {
		t.Fatal("RUNNING was not reported")
	}
	if ls := f.launchesSince(0); len(ls) != 1 || ls[0].Worker != 1 || ls[0].AppID != "app-1" || ls[0].Cores != 2 {
		t.Errorf("launches: %+v", ls)
	}
	if c, m := w.used(); c != 2 || m != 256 {
		t.Errorf("used %d cores %d MB", c, m)
	}
	st := w.latestState()
	if len(st.Executors) != 1 || st.Executors[0].State != wire.ExecutorRunning {
		t.Errorf("latest state: %+v", st)
	}
	// A newer epoch is adopted.
	newer := wire.KillExecutor{Epoch: 7, AppID: "app-1", ExecutorID: 99}
	if code, body := post(api.KillExecutor.Endpoint, "k", newer); code != http.StatusNotFound || !strings.Contains(body, `"code":"unknown_process"`) || w.epoch.Load() != 7 {
		t.Errorf("kill of an unknown executor: %d %s, epoch %d", code, body, w.epoch.Load())
	}
	if code, _ := post(api.KillExecutor.Endpoint, "k", wire.KillExecutor{Epoch: 7, AppID: "app-1", ExecutorID: 3}); code != http.StatusOK {
		t.Errorf("kill: %d", code)
	}
	if !poll.Within(context.Background(), 5*time.Second, pollEvery, func() bool { return f.n.finalUnknown.Load() == 1 }) {
		t.Error("KILLED was not reported (the stub answers 404, as the master does)")
	}
	if f.n.stateErrors.Load() != 0 {
		t.Errorf("state errors: %d", f.n.stateErrors.Load())
	}
	mu.Lock()
	if len(reports) != 2 || reports[0].State != wire.ExecutorRunning || reports[1].State != wire.ExecutorKilled {
		t.Errorf("reports: %+v", reports)
	}
	mu.Unlock()

	// A killed worker does not answer at all.
	w.kill()
	if code, _ := post(api.LaunchExecutor.Endpoint, "k", wire.LaunchExecutor{Epoch: 7, AppID: "app-2", ExecutorID: 0, Process: wire.Process{Command: []string{"x"}, Cores: 1, MemoryMB: 1}}); code != -1 {
		t.Errorf("dead worker answered %d", code)
	}
	if f.n.deadConnClosed.Load() != 1 {
		t.Errorf("dead connections closed: %d", f.n.deadConnClosed.Load())
	}
}
