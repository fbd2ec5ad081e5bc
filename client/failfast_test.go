package client

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// A master whose certificate the client cannot verify fails the call at
// once, whatever the budget: retrying cannot fix it.
func TestUnknownAuthorityFailsAtOnce(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.ClusterStatus{})
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes it refuses
	srv.StartTLS()
	defer srv.Close()
	c := newTestClient(t, []string{srv.URL}, "", WithTLS(&tls.Config{MinVersion: tls.VersionTLS12}))
	start := time.Now()
	_, err := c.Cluster(context.Background())
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Problem != ProblemUnknownAuthority || time.Since(start) > time.Second {
		t.Fatalf("after %s: %v, want a ConfigError of an unknown authority at once", time.Since(start), err)
	}
	// A write too, and it is certainly not done: nothing was sent.
	_, err = c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if !errors.As(err, &ce) || errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, ErrNotDone) {
		t.Fatalf("a write: %v, want a ConfigError, not done", err)
	}
}

// An https URL to a server that speaks plain HTTP (a master started
// without TLS) fails at once: net/http's scheme mismatch is a problem
// retrying cannot fix.
func TestHTTPSToPlainHTTPFailsAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	c := newTestClient(t, []string{strings.Replace(srv.URL, "http://", "https://", 1)}, "", WithTLS(&tls.Config{MinVersion: tls.VersionTLS12}))
	start := time.Now()
	_, err := c.Cluster(context.Background())
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Problem != ProblemNotTLS || time.Since(start) > time.Second {
		t.Fatalf("after %s: %v, want a ConfigError: not TLS, at once", time.Since(start), err)
	}
}

// Every master refusing connections: a client that never reached one
// gives up after its wait for a master, not its budget, and a write is
// certainly not done.
func TestNoMasterGivesUpAfterTheWait(t *testing.T) {
	var masters []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		masters = append(masters, "http://"+ln.Addr().String())
		ln.Close() // nobody listens there now
	}
	c := newTestClient(t, masters, "", WithWaitForMaster(300*time.Millisecond))
	start := time.Now()
	_, err := c.SubmitDriver(context.Background(), wire.DriverDescription{Command: []string{"x"}, Cores: 1, MemoryMB: 1})
	var nm *NoMasterError
	if !errors.As(err, &nm) || !errors.Is(err, ErrNotDone) || len(nm.Refused) != 2 || time.Since(start) > 3*time.Second {
		t.Fatalf("after %s: %v, want a NoMasterError naming both masters, not done", time.Since(start), err)
	}
}

// A write refused by every master before it was proposed (no leader) is
// certainly not done once the budget runs out: not "outcome unknown".
func TestNoLeaderIsNotDone(t *testing.T) {
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteErr(w, r, httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoLeader, "no leader: no quorum"))
	})
	c := newTestClient(t, []string{m.URL()}, "", WithRetryBudget(300*time.Millisecond))
	_, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if !errors.Is(err, ErrNotDone) || errors.Is(err, ErrUnknownOutcome) || StatusCode(err) != http.StatusServiceUnavailable {
		t.Fatalf("RegisterApp without a leader: %v, want ErrNotDone with the 503", err)
	}
	// Once the master answered, refusals are waited out within the budget
	// (no NoMasterError: it is there, with no leader).
	var nm *NoMasterError
	if errors.As(err, &nm) {
		t.Fatalf("a master that answers is not missing: %v", err)
	}
}

// A client that sends no credential is told so, not that its secret was
// refused.
func TestNoCredentialIsSaid(t *testing.T) {
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteErr(w, r, httpx.Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "no credential"))
	})
	c := newTestClient(t, []string{m.URL()}, "")
	_, err := c.Cluster(context.Background())
	if !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "refused the secret") || !strings.Contains(err.Error(), "sent no credential") {
		t.Fatalf("no credential: %v", err)
	}
	c = newTestClient(t, []string{m.URL()}, "s3cret")
	if _, err := c.Cluster(context.Background()); !strings.Contains(err.Error(), "refused the secret") {
		t.Fatalf("a secret refused: %v", err)
	}
}

// A redirect from an https master to an http address is refused: the
// request would carry the client's credential in clear text to wherever a
// master was told (a master's recorded API address is data). Within https,
// and from http, redirects are followed.
func TestRedirectNeverDowngradesToHTTP(t *testing.T) {
	for _, c := range []struct {
		from, leader string
		ok           bool
	}{
		{"https://10.0.0.1:7077", "http://10.0.0.99:7077", false},
		{"https://10.0.0.1:7077", "https://10.0.0.2:7077", true},
		{"https://10.0.0.1:7077", "10.0.0.2:7077", true}, // a bare host:port takes https
		{"http://127.0.0.1:7077", "http://127.0.0.2:7077", true},
	} {
		got, err := leaderBase(&httpx.StatusError{Status: 307, Leader: c.leader}, c.from, "/v1/apps")
		if (err == nil) != c.ok {
			t.Errorf("redirect from %s to %s: %q, %v; want followed %v", c.from, c.leader, got, err, c.ok)
		}
	}
}

// A master that says no quorum, the others down: the write ends at once,
// certainly not done, saying so (it took the whole 30 s budget, then
// ended on a dial error). A master of a partition's minority says no
// quorum while another leads: that one is tried and serves it.
func TestNoQuorumEndsAWriteAtOnce(t *testing.T) {
	minority := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteErr(w, r, httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoQuorum, "no quorum: this master reaches 1 of 3 masters"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	c := newTestClient(t, []string{minority.URL(), down}, "", WithRetryBudget(30*time.Second))
	start := time.Now()
	_, err = c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if !errors.Is(err, ErrNotDone) || !strings.Contains(err.Error(), "no quorum") || time.Since(start) > 2*time.Second {
		t.Fatalf("after %s: %v, want not done, saying no quorum, at once", time.Since(start).Round(time.Millisecond), err)
	}
	// berth kill reads first: that read finds the dead master
	// unreachable, and the write that follows must still ask it rather
	// than ask the minority master again and again until that mark
	// expires (3.5 s of berth kill app without a quorum).
	c = newTestClient(t, []string{down, minority.URL()}, "", WithRetryBudget(30*time.Second))
	_, _ = c.App(context.Background(), "app-1")
	before := minority.count()
	if _, err := c.KillApp(context.Background(), "app-1"); !errors.Is(err, ErrNotDone) || !strings.Contains(err.Error(), "no quorum") {
		t.Errorf("kill after a read: %v, want not done, saying no quorum", err)
	}
	if n := minority.count() - before; n > 2 {
		t.Errorf("kill after a read asked the minority master %d times, want it asked once and the other master tried", n)
	}
	leader := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, wire.Submitted{ID: "app-1"})
	})
	c = newTestClient(t, []string{minority.URL(), leader.URL()}, "")
	if id, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}}); err != nil || id != "app-1" {
		t.Errorf("a minority master first, the leader next: %q %v", id, err)
	}
}
