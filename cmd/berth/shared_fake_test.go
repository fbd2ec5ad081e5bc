package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// sharedCall is one request the shared cluster's fake master got.
type sharedCall struct {
	Method, URI, Body, Auth string
}

// sharedMaster answers the queue, tenant and audit routes like a leader,
// and the submissions, recording every request; it accepts only bearer.
type sharedMaster struct {
	srv    *httptest.Server
	bearer string

	mu    sync.Mutex
	calls []sharedCall
	// queues is what GET /v1/queues answers; a test may change it.
	queues wire.Queues
}

// testTenantToken is the token the fake mints for tenant acme.
const testTenantToken = "bt.acme.Zm9vYmFyYmF6"

func newSharedMaster(t *testing.T, bearer string) *sharedMaster {
	f := &sharedMaster{bearer: bearer, queues: testQueues()}
	mux := http.NewServeMux()
	api := wire.MasterAPI
	mux.HandleFunc(api.Queues.Mux(), func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		httpx.WriteJSON(w, http.StatusOK, f.queues)
	})
	mux.HandleFunc(api.PutQueue.Mux(), testproc.HandleJSON(func(r *http.Request, spec wire.QueueSpec) (any, error) {
		st := wire.QueueStatus{Name: r.PathValue("id"), Weight: 1, Preempt: true, Limit: spec.Limit}
		if spec.Weight != nil {
			st.Weight = *spec.Weight
		}
		if spec.Guarantee != nil {
			st.Guarantee = *spec.Guarantee
		}
		if spec.Preempt != nil {
			st.Preempt = *spec.Preempt
		}
		return st, nil
	}))
	mux.HandleFunc(api.Tenants.Mux(), func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, wire.Tenants{Tenants: []wire.TenantStatus{
			{Name: "acme", Queues: []string{"etl", "adhoc"}, UnixUser: "acme", CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
			{Name: "beta", Queues: []string{"default"}},
		}})
	})
	mux.HandleFunc(api.CreateTenant.Mux(), testproc.HandleJSON(func(r *http.Request, spec wire.TenantSpec) (any, error) {
		return wire.TenantCreated{Name: r.PathValue("id"), Token: testTenantToken}, nil
	}))
	for _, del := range []wire.Endpoint{api.DeleteQueue.Endpoint, api.DeleteTenant.Endpoint} {
		mux.HandleFunc(del.Mux(), func(w http.ResponseWriter, r *http.Request) {
			httpx.WriteJSON(w, http.StatusOK, wire.None{})
		})
	}
	mux.HandleFunc(api.AuditLog.Mux(), func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, testAudit())
	})
	mux.HandleFunc(api.SubmitDriver.Mux(), func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, wire.Submitted{ID: "driver-1"})
	})
	mux.HandleFunc(api.RegisterApp.Mux(), func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, wire.Submitted{ID: "app-1"})
	})
	mux.HandleFunc(api.AppEvents.Mux(), func(w http.ResponseWriter, r *http.Request) {
		// The app ends at once: berth run exits 0.
		json.NewEncoder(w).Encode(wire.AppEvent{Type: wire.EventAppRemoved, AppID: "app-1",
			App: &wire.AppStatus{ID: "app-1", State: wire.AppFinished}})
	})
	auth := httpx.RequireSecret(bearer, mux)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answeredProbe(w, r) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, sharedCall{r.Method, r.URL.RequestURI(), string(body), r.Header.Get("Authorization")})
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		auth.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func testQueues() wire.Queues {
	limit := wire.Amount{Cores: 32}
	return wire.Queues{
		Capacity: wire.Amount{Cores: 64, MemoryMB: 262144, Resources: wire.ResourceAmounts{"gpu": 8}},
		Queues: []wire.QueueStatus{
			{Name: "default", Weight: 1, Preempt: true, InUse: wire.Amount{Cores: 4, MemoryMB: 4096}, DominantShare: 0.0625,
				FairDominantShare: 0.25, Apps: 1},
			{Name: "etl", Weight: 2, Guarantee: wire.Amount{Cores: 8, MemoryMB: 16384, Resources: wire.ResourceAmounts{"gpu": 2}},
				Limit: &limit, InUse: wire.Amount{Cores: 2, MemoryMB: 1536, Resources: wire.ResourceAmounts{"gpu": 0.5}},
				DominantShare: 0.0625, FairDominantShare: 0.5, Waiting: wire.Amount{Cores: 6}, Apps: 2, Drivers: 1,
				Reclaiming: "reclaiming cores 6 from queue default"},
		},
	}
}

func testAudit() wire.Audit {
	at := time.Date(2026, 3, 1, 12, 30, 0, 0, time.Local)
	return wire.Audit{Entries: []wire.AuditEntry{
		{Time: at, Principal: "secret", Route: "PUT /v1/queues/{id}", Target: "etl", Outcome: "ok", Status: 200},
		{Time: at.Add(time.Minute), Principal: "tenant:acme", Tenant: "acme", Route: "POST /v1/drivers", Outcome: "forbidden", Status: 403},
	}}
}

func (f *sharedMaster) env() []string {
	return []string{"BERTH_MASTER=" + f.srv.URL, "BERTH_SECRET=" + f.bearer}
}

// requests returns the requests the master got, in order.
func (f *sharedMaster) requests() []sharedCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// only returns the one request the master got, failing the test otherwise.
func (f *sharedMaster) only(t *testing.T) sharedCall {
	t.Helper()
	calls := f.requests()
	if len(calls) != 1 {
		t.Fatalf("the master got %d requests, want 1: %+v", len(calls), calls)
	}
	f.mu.Lock()
	f.calls = nil
	f.mu.Unlock()
	return calls[0]
}
