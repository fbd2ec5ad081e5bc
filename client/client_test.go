package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// New checks its masters by wire.ParseMasterURL's rule (tested there).
func TestNewRefusesBadMasters(t *testing.T) {
	if _, err := New(nil, ""); err == nil {
		t.Error("New with no masters: no error")
	}
	if _, err := New([]string{"http://127.0.0.1:7077", "nope"}, ""); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("New with a bad master: %v", err)
	}
}

func TestRedirectToLeaderKeepsSecret(t *testing.T) {
	const secret = "s3cret"
	leader := newFakeMaster(t, secret, func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.Submitted{ID: "app-1"})
	})
	follower := newFakeMaster(t, secret, func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteErr(w, r, &httpx.StatusError{Status: 307, Message: "not the leader", Leader: leader.URL()})
	})
	c := newTestClient(t, []string{follower.URL()}, secret)

	id, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if err != nil || id != "app-1" {
		t.Fatalf("RegisterApp = %q, %v", id, err)
	}
	if got := leader.authHeaders(); len(got) != 1 || got[0] != "Bearer "+secret {
		t.Fatalf("leader saw Authorization %q, want the secret", got)
	}
	// The leader is remembered: the next write goes straight to it.
	if _, err := c.KillApp(context.Background(), "app-1"); err != nil {
		t.Fatal(err)
	}
	if follower.count() != 1 || leader.count() != 2 {
		t.Fatalf("follower got %d requests, leader %d; want 1 and 2", follower.count(), leader.count())
	}
}

func TestRedirectThroughLocationOnly(t *testing.T) {
	leader := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/drivers" {
			t.Errorf("leader got %s", r.URL.Path)
		}
		httpx.WriteJSON(w, 200, wire.Submitted{ID: "driver-1"})
	})
	follower := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		// A bare redirect, as a generic proxy would send it: the full URL.
		w.Header().Set("Location", leader.URL()+r.URL.Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	c := newTestClient(t, []string{follower.URL()}, "")
	id, err := c.SubmitDriver(context.Background(), wire.DriverDescription{Command: []string{"x"}, Cores: 1, MemoryMB: 1})
	if err != nil || id != "driver-1" {
		t.Fatalf("SubmitDriver = %q, %v", id, err)
	}
}

func TestFailoverOnConnectionRefused(t *testing.T) {
	live := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.Submitted{ID: "app-7"})
	})
	c := newTestClient(t, []string{testproc.ClosedURL(t), live.URL()}, "")
	// A refused connection certainly did not reach a master: it is retried
	// on the next one.
	id, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if err != nil || id != "app-7" {
		t.Fatalf("RegisterApp = %q, %v", id, err)
	}
}

func TestUnavailableRetriedThenSuccess(t *testing.T) {
	var calls atomic.Int32
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			httpx.WriteError(w, 503, "no leader")
			return
		}
		httpx.WriteJSON(w, 200, wire.Submitted{ID: "app-2"})
	})
	c := newTestClient(t, []string{m.URL()}, "")
	id, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if err != nil || id != "app-2" || calls.Load() != 3 {
		t.Fatalf("RegisterApp = %q, %v after %d calls; want app-2 after 3", id, err, calls.Load())
	}
}

func TestUnavailableGivesUpAfterBudget(t *testing.T) {
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, 503, "no leader")
	})
	c := newTestClient(t, []string{m.URL()}, "", WithRetryBudget(200*time.Millisecond))
	start := time.Now()
	_, err := c.Cluster(context.Background())
	if StatusCode(err) != 503 || !strings.Contains(err.Error(), "no leader") {
		t.Fatalf("Cluster: %v, want the 503", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("gave up after %s, budget 200ms", d)
	}
}

func TestClientErrorNotRetried(t *testing.T) {
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, 400, "cores must be positive")
	})
	c := newTestClient(t, []string{m.URL()}, "")
	_, err := c.SubmitDriver(context.Background(), wire.DriverDescription{Command: []string{"x"}})
	if StatusCode(err) != 400 || !strings.Contains(err.Error(), "cores must be positive") {
		t.Fatalf("SubmitDriver: %v, want the 400 and its reason", err)
	}
	if _, err := c.KillDriver(context.Background(), "d"); StatusCode(err) != 400 {
		t.Fatalf("KillDriver: %v", err)
	}
	if m.count() != 2 {
		t.Fatalf("master got %d requests, want 2 (no retries)", m.count())
	}
}

func TestWrongSecret(t *testing.T) {
	m := newFakeMaster(t, "right", func(w http.ResponseWriter, r *http.Request) {
		t.Error("handler reached with the wrong secret")
	})
	c := newTestClient(t, []string{m.URL()}, "wrong")
	_, err := c.Cluster(context.Background())
	if !errors.Is(err, ErrUnauthorized) || StatusCode(err) != 401 || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("Cluster with the wrong secret: %v", err)
	}
	if m.count() != 1 {
		t.Fatalf("master got %d requests, want 1", m.count())
	}
}

// A submission whose outcome is unknown (the connection dropped after the
// master read it, a 504 from a leader that lost its leadership) is retried
// under the same idempotency key, so the master can tell the repeat.
func TestSubmissionRetriedUnderItsKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get(wire.IdempotencyKeyHeader))
		n := len(keys)
		mu.Unlock()
		switch n {
		case 1:
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		case 2:
			httpx.WriteError(w, http.StatusGatewayTimeout, "leadership lost; outcome unknown")
		default:
			httpx.WriteJSON(w, 200, wire.Submitted{ID: "app-1", Existing: true})
		}
	})
	c := newTestClient(t, []string{m.URL()}, "")
	id, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if err != nil || id != "app-1" {
		t.Fatalf("RegisterApp = %q, %v", id, err)
	}
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), keys...)
	}
	if k := sent(); len(k) != 3 || k[0] == "" || k[1] != k[0] || k[2] != k[0] {
		t.Fatalf("keys sent: %q, want one key three times", k)
	}

	// A key the caller chose is the one sent; each call makes up its own
	// otherwise.
	if _, err := c.SubmitDriver(context.Background(), wire.DriverDescription{Command: []string{"x"}}, WithIdempotencyKey("mine")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubmitDriver(context.Background(), wire.DriverDescription{Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if k := sent(); len(k) != 5 || k[3] != "mine" || k[4] == "mine" || k[4] == "" || k[4] == k[0] {
		t.Fatalf("keys sent: %q", k)
	}
}

// When the retries run out after an attempt that may have reached the
// master, the error says the outcome is unknown; after failures that
// certainly did not, it does not.
func TestUnknownOutcomeWhenRetriesRunOut(t *testing.T) {
	drop := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	})
	c := newTestClient(t, []string{drop.URL()}, "", WithRetryBudget(300*time.Millisecond))
	_, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("RegisterApp against a master that drops connections: %v, want ErrUnknownOutcome", err)
	}
	if drop.count() < 2 {
		t.Fatalf("tried %d times, want retries", drop.count())
	}
	if _, err := c.Cluster(context.Background()); err == nil || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("a read: %v, want an error that is not ErrUnknownOutcome", err)
	}
	// A final answer after an attempt that may have reached the master:
	// the first attempt's outcome is still unknown.
	var calls atomic.Int32
	dropThenRefuse := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		httpx.WriteError(w, http.StatusUnprocessableEntity, "idempotency key reused")
	})
	c = newTestClient(t, []string{dropThenRefuse.URL()}, "")
	_, err = c.SubmitDriver(context.Background(), wire.DriverDescription{Command: []string{"x"}})
	if !errors.Is(err, ErrUnknownOutcome) || StatusCode(err) != http.StatusUnprocessableEntity {
		t.Fatalf("SubmitDriver dropped, then refused: %v, want ErrUnknownOutcome and the 422", err)
	}
	unavailable := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, 503, "no leader")
	})
	c = newTestClient(t, []string{unavailable.URL()}, "", WithRetryBudget(300*time.Millisecond))
	_, err = c.SubmitDriver(context.Background(), wire.DriverDescription{Command: []string{"x"}})
	if StatusCode(err) != 503 || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("SubmitDriver against a master without a leader: %v, want the 503 only", err)
	}
}

func TestFollowerReadAccepted(t *testing.T) {
	follower := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.ClusterStatus{MasterID: "m2", View: wire.ViewFollower, Status: wire.MasterStandby})
	})
	c := newTestClient(t, []string{follower.URL()}, "")
	st, err := c.Cluster(context.Background())
	if err != nil || st.View != wire.ViewFollower || st.MasterID != "m2" {
		t.Fatalf("Cluster = %+v, %v", st, err)
	}
}

func TestWaitDriverFollowsRelaunch(t *testing.T) {
	var polls atomic.Int32
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/drivers/d1":
			st := wire.DriverStatus{ID: "d1", State: wire.DriverRunning}
			if polls.Add(1) > 2 {
				st.State, st.RelaunchedAs = wire.DriverRelaunching, "d2"
			}
			httpx.WriteJSON(w, 200, st)
		case "/v1/drivers/d2":
			httpx.WriteJSON(w, 200, wire.DriverStatus{ID: "d2", State: wire.DriverFinished})
		default:
			httpx.WriteError(w, 404, "no such driver")
		}
	})
	c := newTestClient(t, []string{m.URL()}, "")
	st, err := c.WaitDriver(context.Background(), "d1", time.Millisecond)
	if err != nil || st.ID != "d2" || st.State != wire.DriverFinished {
		t.Fatalf("WaitDriver = %+v, %v", st, err)
	}
	if _, err := c.WaitDriver(context.Background(), "nope", time.Millisecond); StatusCode(err) != 404 {
		t.Fatalf("WaitDriver of an unknown driver: %v", err)
	}
}

func TestLogs(t *testing.T) {
	// The log proxy tails in bytes, like the master and the workers.
	var log strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&log, "line %d\n", i)
	}
	whole := log.String()
	var queries []string
	var mu sync.Mutex
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		data := whole
		if n, err := strconv.Atoi(r.URL.Query().Get("tail")); err == nil && n < len(data) {
			data = data[len(data)-n:]
		}
		io.WriteString(w, data)
	})
	c := newTestClient(t, []string{m.URL()}, "")
	ctx := context.Background()

	rc, err := c.ExecutorLogs(ctx, "app-1", 3, Stderr, 10)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	mu.Lock()
	first := queries[0]
	mu.Unlock()
	if string(data) != "line 2999\n" || first != "/v1/apps/app-1/executors/3/logs/stderr?tail=10" {
		t.Fatalf("tail 10 bytes = %q via %q", data, first)
	}
	for _, n := range []int{1, 2, 1500, 2999, 3000, 5000} {
		data, err := c.DriverLogLines(ctx, "d1", Stdout, n)
		lines := strings.SplitAfter(whole, "\n")
		want := strings.Join(lines[max(0, len(lines)-1-n):], "")
		if err != nil || string(data) != want {
			t.Fatalf("last %d lines: %d bytes, %v; want %d bytes", n, len(data), err, len(want))
		}
	}
	if _, err := c.DriverLogs(ctx, "d1", "stdin", 0); err == nil {
		t.Fatal("stream stdin accepted")
	}
}

func TestTailLines(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb\n"},
		{"", 3, ""},
		{"\n\n", 1, "\n"},
	}
	for _, c := range cases {
		if got := string(tailLines([]byte(c.in), c.n)); got != c.want {
			t.Errorf("tailLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// LeaderCluster goes on to the leader a follower names, and settles for the
// follower's view when the leader does not answer.
func TestLeaderClusterPrefersTheLeader(t *testing.T) {
	leader := httptest.NewServer(httpx.RequireSecret("k", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.ClusterStatus{MasterID: "m2", View: wire.ViewLeader})
	})))
	defer leader.Close()
	var names atomic.Value // the leader the follower names; changed mid-test
	names.Store(leader.URL)
	follower := httptest.NewServer(httpx.RequireSecret("k", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.ClusterStatus{MasterID: "m1", View: wire.ViewFollower, Leader: names.Load().(string)})
	})))
	defer follower.Close()
	c, err := New([]string{follower.URL}, "k")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.LeaderCluster(context.Background())
	if err != nil || st.MasterID != "m2" || st.View != wire.ViewLeader {
		t.Fatalf("LeaderCluster: %+v %v", st, err)
	}
	names.Store("http://127.0.0.1:1") // a leader that does not answer
	c, _ = New([]string{follower.URL}, "k")
	st, err = c.LeaderCluster(context.Background())
	if err != nil || st.MasterID != "m1" || st.View != wire.ViewFollower {
		t.Fatalf("LeaderCluster with the leader down: %+v %v", st, err)
	}
}
