package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// sharedCall is one request a fake master got: its method, path, query
// and body.
type sharedCall struct{ method, path, query, body string }

// recordingMaster is a fake leader that records each request and answers
// it with answer's value as JSON, or its error.
func recordingMaster(t *testing.T, answer func(r *http.Request) (any, error)) (*fakeMaster, func() []sharedCall) {
	t.Helper()
	var mu sync.Mutex
	var calls []sharedCall
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, sharedCall{r.Method, r.URL.Path, r.URL.RawQuery, string(body)})
		mu.Unlock()
		v, err := answer(r)
		if err != nil {
			httpx.WriteErr(w, r, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, v)
	})
	return m, func() []sharedCall {
		mu.Lock()
		defer mu.Unlock()
		return append([]sharedCall(nil), calls...)
	}
}

// dropFirst is a fake master's handler that reads the first request and
// closes its connection unanswered (it reached the master, the caller
// cannot know what it did), then lets then answer; reset starts over.
func dropFirst(then http.HandlerFunc) (h http.HandlerFunc, reset func()) {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			then(w, r)
			return
		}
		_, _ = io.ReadAll(r.Body)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}, func() { n.Store(0) }
}

// Each method calls its route with its body, and decodes the answer.
func TestSharedClusterMethods(t *testing.T) {
	two, yes := 2.0, true
	queues := wire.Queues{Capacity: wire.Amount{Cores: 64}, Queues: []wire.QueueStatus{{Name: "etl", Weight: 2, FairDominantShare: 0.5}}}
	status := wire.QueueStatus{Name: "etl", Weight: 2, Preempt: true}
	tenants := wire.Tenants{Tenants: []wire.TenantStatus{{Name: "acme", Queues: []string{"etl"}}}}
	created := wire.TenantCreated{Name: "acme", Token: "bt.acme.s3cr3t"}
	audit := wire.Audit{Entries: []wire.AuditEntry{{Principal: "tenant:acme", Route: "POST /v1/drivers", Outcome: "ok", Status: 200}}}
	m, calls := recordingMaster(t, func(r *http.Request) (any, error) {
		switch r.Method + " " + r.URL.Path {
		case "GET /v1/queues":
			return queues, nil
		case "PUT /v1/queues/etl":
			return status, nil
		case "GET /v1/tenants":
			return tenants, nil
		case "POST /v1/tenants/acme":
			return created, nil
		case "GET /v1/audit":
			return audit, nil
		}
		return struct{}{}, nil
	})
	c := newTestClient(t, []string{m.URL()}, "")
	ctx := context.Background()

	check := func(what string, got, want any, err error) {
		t.Helper()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %+v, %v; want %+v", what, got, err, want)
		}
	}
	q, err := c.Queues(ctx)
	check("Queues", q, queues, err)
	st, err := c.PutQueue(ctx, "etl", wire.QueueSpec{Weight: &two, Guarantee: &wire.Amount{Cores: 8, MemoryMB: 2048, Resources: wire.ResourceAmounts{"gpu": 0.5}}, Preempt: &yes})
	check("PutQueue", st, status, err)
	check("DeleteQueue", nil, nil, c.DeleteQueue(ctx, "etl"))
	ts, err := c.Tenants(ctx)
	check("Tenants", ts, tenants, err)
	tc, err := c.CreateTenant(ctx, "acme", wire.TenantSpec{Queues: []string{"etl", "adhoc"}, UnixUser: "acme"})
	check("CreateTenant", tc, created, err)
	check("DeleteTenant", nil, nil, c.DeleteTenant(ctx, "acme"))
	a, err := c.Audit(ctx, 90*time.Minute, "acme")
	check("Audit", a, audit, err)
	_, err = c.Audit(ctx, 0, "")
	check("Audit of all", nil, nil, err)

	want := []sharedCall{
		{"GET", "/v1/queues", "", ""},
		{"PUT", "/v1/queues/etl", "", `{"weight":2,"guarantee":{"cores":8,"memoryMB":2048,"resources":{"gpu":0.5}},"preempt":true}`},
		{"DELETE", "/v1/queues/etl", "", ""},
		{"GET", "/v1/tenants", "", ""},
		{"POST", "/v1/tenants/acme", "", `{"queues":["etl","adhoc"],"unixUser":"acme"}`},
		{"DELETE", "/v1/tenants/acme", "", ""},
		{"GET", "/v1/audit", "since=1h30m0s&tenant=acme", ""},
		{"GET", "/v1/audit", "", ""},
	}
	if got := calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("requests:\n%q\nwant\n%q", got, want)
	}
	if _, err := c.Audit(ctx, -time.Second, ""); err == nil {
		t.Error("Audit with a negative since: no error")
	}
}

// CreateTenant is not repeated once an attempt may have reached a master:
// a repeat would mint another token, or be refused with the first lost.
// PutQueue, idempotent, is.
func TestCreateTenantNotRepeatedAfterUnknownOutcome(t *testing.T) {
	handle, reset := dropFirst(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			httpx.WriteJSON(w, 200, wire.TenantCreated{Name: "acme", Token: "bt.acme.second"})
			return
		}
		httpx.WriteJSON(w, 200, wire.QueueStatus{Name: "etl"})
	})
	m := newFakeMaster(t, "", handle)
	c := newTestClient(t, []string{m.URL()}, "")
	_, err := c.CreateTenant(context.Background(), "acme", wire.TenantSpec{Queues: []string{"etl"}})
	if !errors.Is(err, ErrUnknownOutcome) || m.count() != 1 {
		t.Fatalf("CreateTenant on a dropped connection: %v after %d attempts; want ErrUnknownOutcome after 1", err, m.count())
	}

	// A 504 too: the leader lost its leadership before it knew.
	timeout := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, http.StatusGatewayTimeout, "leadership lost; outcome unknown")
	})
	c2 := newTestClient(t, []string{timeout.URL()}, "")
	if _, err := c2.CreateTenant(context.Background(), "acme", wire.TenantSpec{Queues: []string{"etl"}}); !errors.Is(err, ErrUnknownOutcome) || timeout.count() != 1 {
		t.Fatalf("CreateTenant answered 504: %v after %d attempts; want ErrUnknownOutcome after 1", err, timeout.count())
	}

	reset()
	if st, err := c.PutQueue(context.Background(), "etl", wire.QueueSpec{}); err != nil || st.Name != "etl" || m.count() != 3 {
		t.Fatalf("PutQueue on a dropped connection = %+v, %v after %d requests in all; want it retried", st, err, m.count())
	}
}

// A creation that certainly reached no leader is sent on: a follower's
// redirect is followed, and the leader that answers is remembered.
func TestCreateTenantFollowsRedirect(t *testing.T) {
	leader := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.TenantCreated{Name: "acme", Token: "bt.acme.x"})
	})
	follower := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteErr(w, r, &httpx.StatusError{Status: 307, Message: "not the leader", Leader: leader.URL()})
	})
	c := newTestClient(t, []string{follower.URL()}, "")
	got, err := c.CreateTenant(context.Background(), "acme", wire.TenantSpec{Queues: []string{"etl"}})
	if err != nil || got.Token != "bt.acme.x" {
		t.Fatalf("CreateTenant through a follower = %+v, %v", got, err)
	}
	if _, err := c.Tenants(context.Background()); err != nil || follower.count() != 1 || leader.count() != 2 {
		t.Fatalf("Tenants: %v; follower got %d requests, leader %d; want 1 and 2", err, follower.count(), leader.count())
	}
}

// The queue and tenant reads go to the leader a follower names; the audit
// log's query survives a redirect that only has Location (a proxy's).
func TestSharedReadsFollowRedirects(t *testing.T) {
	var query atomic.Value
	leader := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		query.Store(r.URL.RawQuery)
		switch r.URL.Path {
		case "/v1/queues":
			httpx.WriteJSON(w, 200, wire.Queues{Queues: []wire.QueueStatus{{Name: "default"}}})
		case "/v1/audit":
			httpx.WriteJSON(w, 200, wire.Audit{Entries: []wire.AuditEntry{{Route: "DELETE /v1/queues/{id}"}}})
		default:
			httpx.WriteError(w, http.StatusNotFound, "no route %s", r.URL.Path)
		}
	})
	follower := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", leader.URL()+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	c := newTestClient(t, []string{follower.URL()}, "")
	if q, err := c.Queues(context.Background()); err != nil || len(q.Queues) != 1 {
		t.Fatalf("Queues through a follower = %+v, %v", q, err)
	}
	c = newTestClient(t, []string{follower.URL()}, "")
	a, err := c.Audit(context.Background(), time.Hour, "")
	if err != nil || len(a.Entries) != 1 || query.Load() != "since=1h0m0s" {
		t.Fatalf("Audit through a redirect = %+v, %v; leader saw query %q", a, err, query.Load())
	}
}

// A delete whose first attempt may have done it, and whose repeat finds
// the queue gone, says so (ErrGoneAfterRetry: gone, by that attempt or
// another client's); a queue that was never there is the 404.
func TestDeleteAfterUnknownOutcome(t *testing.T) {
	handle, _ := dropFirst(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteErr(w, r, httpx.Coded(http.StatusNotFound, wire.CodeUnknownQueue, "no queue %q", "etl"))
	})
	m := newFakeMaster(t, "", handle)
	c := newTestClient(t, []string{m.URL()}, "")
	if err := c.DeleteQueue(context.Background(), "etl"); !errors.Is(err, ErrGoneAfterRetry) || m.count() != 2 {
		t.Fatalf("DeleteQueue dropped, then gone: %v after %d attempts; want ErrGoneAfterRetry after 2", err, m.count())
	}
	err := c.DeleteQueue(context.Background(), "etl")
	if StatusCode(err) != http.StatusNotFound || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("DeleteQueue of a queue that is not there: %v, want the 404", err)
	}
}

// WithToken sends the token as the bearer; a refused one is ErrUnauthorized
// and says it was the token; a secret and a token together are refused.
func TestToken(t *testing.T) {
	const token = "bt.acme.s3cr3t"
	m := newFakeMaster(t, token, func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.Queues{})
	})
	c := newTestClient(t, []string{m.URL()}, "", WithToken(token))
	if _, err := c.Queues(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := m.authHeaders(); len(got) != 1 || got[0] != "Bearer "+token {
		t.Fatalf("Authorization %q, want the token", got)
	}
	c = newTestClient(t, []string{m.URL()}, "", WithToken("bt.acme.wrong"))
	_, err := c.Queues(context.Background())
	if !errors.Is(err, ErrUnauthorized) || StatusCode(err) != 401 || !strings.Contains(err.Error(), "refused the token") {
		t.Fatalf("Queues with a wrong token: %v", err)
	}
	if _, err := New([]string{m.URL()}, "secret", WithToken(token)); err == nil {
		t.Fatal("New with a secret and a token: no error")
	}
}
