package httpx

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-cluster/berth/security"
)

// testTLS makes a CA in a temp dir with master m1's and worker w1's
// certificates for 127.0.0.1, as `berth tls` does, and loads both.
func testTLS(t *testing.T) (m1, w1 *security.TLS) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tls")
	if err := security.CreateCA(dir); err != nil {
		t.Fatal(err)
	}
	load := func(role security.Role, name string) *security.TLS {
		t.Helper()
		if err := security.CreateCert(dir, role, name, []string{"127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
		pair, err := security.Load(security.Files{CA: filepath.Join(dir, "ca.pem"),
			Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")})
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	return load(security.RoleMaster, "m1"), load(security.RoleWorker, "w1")
}

// A master's client (the one master/outbox sends worker commands with)
// reaches a TLS server presenting w1's certificate when w1 is expected,
// and sends nothing to it when w2 is: the commands and credentials meant
// for w2 never reach a process that is not w2.
func TestExpectPeerSendsOnlyToTheExpectedWorker(t *testing.T) {
	t.Parallel()
	m1, w1 := testTLS(t)
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	srv.TLS = w1.ServerConfig(tls.VerifyClientCertIfGiven)
	srv.StartTLS()
	defer srv.Close()

	// As master.Config.workerClient builds it: one client, pooled, for
	// every worker.
	newClient := func() *Client {
		return NewClient("", 5*time.Second).WithIdlePool(8, 1).WithTLS(m1.ClientConfig(security.RoleWorker))
	}
	send := func(c *Client, expect string) error {
		return c.Do(ExpectPeer(context.Background(), expect), http.MethodPost, srv.URL+"/v1/executors", struct{}{}, nil)
	}
	// refused checks that a request expecting w2 fails naming both, and,
	// if unsent, that it never reached the server.
	refused := func(c *Client, what string, unsent bool) {
		t.Helper()
		before := hits.Load()
		err := send(c, "w2")
		if err == nil || !strings.Contains(err.Error(), `"w1"`) || !strings.Contains(err.Error(), `"w2"`) {
			t.Errorf("%s: a request expecting w2 sent to w1's server: %v", what, err)
		}
		if got := hits.Load(); unsent && got != before {
			t.Errorf("%s: the request meant for w2 reached w1's server", what)
		}
	}

	if err := send(newClient(), "w1"); err != nil || hits.Load() != 1 {
		t.Fatalf("a request expecting w1 to w1's server: %v (%d requests arrived)", err, hits.Load())
	}
	refused(newClient(), "a new connection", true)
	// A connection kept from a request to w1 is still w1's. Open checks
	// the answer's TLS state, so the caller learns of the mismatch; but
	// the request has then been sent on it already (the check at dial time
	// does not run for a pooled connection).
	c := newClient()
	if err := send(c, "w1"); err != nil {
		t.Fatalf("a request expecting w1: %v", err)
	}
	refused(c, "a pooled connection", false)
}
