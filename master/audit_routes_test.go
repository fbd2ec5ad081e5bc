package master

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// callJSON sends body (nil: none) on e to base and returns the status and
// the answer.
func callJSON(t *testing.T, base string, e wire.Endpoint, body any, params ...string) (int, []byte) {
	t.Helper()
	var data []byte
	if body != nil {
		data, _ = json.Marshal(body)
	}
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

// Changes that write nothing to the state (a worker's failures cleared, a
// worker decommissioned) left no audit entry; and a refusal echoed a
// megabyte of what it refused. Both through the real HTTP stack.
func TestChangesWithoutAWriteAreAuditedAndRefusalsEchoLittle(t *testing.T) {
	m, base := runMaster(t, Config{WorkerTimeout: time.Minute}, nil, nil)
	api := wire.MasterAPI
	fakeWorker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) }))
	defer fakeWorker.Close()
	reg := wire.RegisterWorker{ID: "w1", Host: "127.0.0.1", Port: fakeWorker.Listener.Addr().(*net.TCPAddr).Port, Address: fakeWorker.URL, Cores: 2, MemoryMB: 4096}
	for deadline := time.Now().Add(10 * time.Second); ; {
		status, body := callJSON(t, base, api.RegisterWorker.Endpoint, reg)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registration: %d %s", status, body)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline: the master is electing itself
	}
	for _, e := range []wire.Endpoint{api.ClearWorker.Endpoint, api.Decommission.Endpoint} {
		if status, body := callJSON(t, base, e, nil, "w1"); status != http.StatusOK {
			t.Fatalf("%s: %d %s", e.Mux(), status, body)
		}
	}
	// The web UI's clear, by an operator's session, goes through the loop
	// as the route's does and is audited as the session.
	asSession := httpx.WithPrincipal(context.Background(), httpx.Principal{Kind: httpx.KindOperator, Via: httpx.ViaSession})
	if err := (uiSource{m}).ClearWorker(asSession, "w1"); err != nil {
		t.Fatalf("the web UI's clear: %v", err)
	}
	huge := strings.Repeat("a", 900<<10)
	status, body := callJSON(t, base, api.DeleteQueue.Endpoint, nil, huge)
	if status != http.StatusBadRequest || len(body) > 1024 || !strings.Contains(string(body), "bytes cut") {
		t.Errorf("DELETE of a 900 KB queue name: %d, %d bytes (%.120s): want a 400 of a few hundred bytes that says what it cut", status, len(body), body)
	}
	// Every route that names a thing in its path answers a 900 KB name
	// with a few hundred bytes, whatever it answers (several echoed it).
	for _, e := range []wire.Endpoint{api.App.Endpoint, api.KillApp.Endpoint, api.Driver.Endpoint, api.KillDriver.Endpoint,
		api.DeleteTenant.Endpoint, api.Undrain.Endpoint, api.RemoveRaftPeer.Endpoint, api.ClearWorker.Endpoint} {
		if status, body := callJSON(t, base, e, nil, huge); status < 400 || len(body) > 2048 {
			t.Errorf("%s of a 900 KB id: %d, %d bytes (%.120s): want a refusal of a few hundred bytes", e.Mux(), status, len(body), body)
		}
	}
	for _, c := range []struct {
		e    wire.Endpoint
		body any
	}{{api.PutQueue.Endpoint, wire.QueueSpec{}}, {api.CreateTenant.Endpoint, wire.TenantSpec{Queues: []string{"default"}}}} {
		if status, body := callJSON(t, base, c.e, c.body, huge); status < 400 || len(body) > 2048 {
			t.Errorf("%s of a 900 KB name: %d, %d bytes (%.120s): want a refusal of a few hundred bytes", c.e.Mux(), status, len(body), body)
		}
	}
	// The entries are written after the answers: poll for them.
	want := map[string]bool{api.ClearWorker.Mux(): false, api.Decommission.Mux(): false, api.DeleteQueue.Mux(): false, api.UIActions.Mux(): false}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, body := callJSON(t, base, api.AuditLog.Endpoint, nil)
		var log wire.Audit
		if err := json.Unmarshal(body, &log); err != nil {
			t.Fatalf("audit log %s: %v", body, err)
		}
		for _, e := range log.Entries {
			if _, ok := want[e.Route]; ok && e.Route != api.UIActions.Mux() && e.Principal == "loopback" && len(e.Target) <= wire.MaxAuditText+32 {
				want[e.Route] = true
			}
			if e.Route == api.UIActions.Mux() && e.Principal == "ui-session" && e.Target == "w1" && e.Outcome == "ok" {
				want[e.Route] = true
			}
		}
		missing := []string{}
		for r, seen := range want {
			if !seen {
				missing = append(missing, r)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not in the audit log (principal loopback, target clipped): %v; log: %s", missing, body)
		}
	}
}
