package client

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// fakeMaster is one master of a test cluster: it records the requests it
// gets and answers them with handle.
type fakeMaster struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []string // "METHOD /path"
	auth     []string // the Authorization header of each request
	probes   int      // GET /healthz, not counted in requests
}

func newFakeMaster(t *testing.T, secret string, handle http.HandlerFunc) *fakeMaster {
	t.Helper()
	f := &fakeMaster{}
	auth := httpx.RequireSecret(secret, handle)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.MasterAPI.Health.Path() {
			// A liveness probe (silent.go), open as a master's is; not
			// an attempt of the call.
			f.mu.Lock()
			f.probes++
			f.mu.Unlock()
			w.Write([]byte("ok\n"))
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.Path)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		auth.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMaster) URL() string { return f.srv.URL }

func (f *fakeMaster) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeMaster) authHeaders() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}

// newTestClient returns a client with quick retries for tests.
func newTestClient(t *testing.T, masters []string, secret string, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{
		WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		WithRetryBudget(10 * time.Second),
		WithStreamRetryBudget(10 * time.Second),
		WithRequestTimeout(5 * time.Second),
	}, opts...)
	c, err := New(masters, secret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
