package client

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// writeEvents sends events as the master does: one JSON object per line,
// flushed.
func writeEvents(w http.ResponseWriter, evs ...wire.AppEvent) {
	enc := json.NewEncoder(w)
	for _, ev := range evs {
		_ = enc.Encode(ev)
	}
	w.(http.Flusher).Flush()
}

// recorder collects the events a handler gets.
type recorder struct {
	mu    sync.Mutex
	types []wire.EventType
}

func (r *recorder) handle(ev wire.AppEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.types = append(r.types, ev.Type)
	return nil
}

func (r *recorder) got() []wire.EventType {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wire.EventType(nil), r.types...)
}

func sameTypes(a []wire.EventType, b ...wire.EventType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var (
	evSnapshot = wire.AppEvent{Type: wire.EventSnapshot, AppID: "app-1", App: &wire.AppStatus{ID: "app-1"}}
	evAdded    = wire.AppEvent{Type: wire.EventExecutorAdded, AppID: "app-1", Executor: &wire.ExecutorStatus{ID: 1}}
	evUpdated  = wire.AppEvent{Type: wire.EventExecutorUpdated, AppID: "app-1", Executor: &wire.ExecutorStatus{ID: 1, State: wire.ExecutorRunning}}
	evBeat     = wire.AppEvent{Type: wire.EventHeartbeat, AppID: "app-1"}
	evChanged  = wire.AppEvent{Type: wire.EventMasterChanged, AppID: "app-1", Epoch: 2}
	evRemoved  = wire.AppEvent{Type: wire.EventAppRemoved, AppID: "app-1", App: &wire.AppStatus{ID: "app-1", State: wire.AppFinished}}
)

func TestEventsReconnectAfterDrop(t *testing.T) {
	var conns atomic.Int32
	m := newFakeMaster(t, "k", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/apps/app-1/events" {
			t.Errorf("unexpected %s", r.URL.Path)
		}
		if conns.Add(1) == 1 {
			// The stream breaks without appRemoved.
			writeEvents(w, evSnapshot, evAdded)
			return
		}
		writeEvents(w, evSnapshot, evBeat, evUpdated, evRemoved)
	})
	c := newTestClient(t, []string{m.URL()}, "k")
	var rec recorder
	if err := c.Events(context.Background(), "app-1", rec.handle); err != nil {
		t.Fatalf("Events: %v", err)
	}
	if got := rec.got(); !sameTypes(got, "snapshot", "executorAdded", "snapshot", "executorUpdated", "appRemoved") {
		t.Fatalf("events %v", got)
	}
	if conns.Load() != 2 {
		t.Fatalf("%d connections, want 2", conns.Load())
	}
}

func TestEventsFailoverToNextMaster(t *testing.T) {
	first := make(chan struct{})
	a := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, evSnapshot)
		close(first)
		<-r.Context().Done() // held open until the master "dies"
	})
	b := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, evSnapshot, evChanged, evRemoved)
	})
	c := newTestClient(t, []string{a.URL(), b.URL()}, "")
	var rec recorder
	done := make(chan error, 1)
	go func() { done <- c.Events(context.Background(), "app-1", rec.handle) }()

	<-first
	// Master a dies: it refuses new connections and its streams break.
	a.srv.Listener.Close()
	a.srv.CloseClientConnections()

	if err := testproc.Receive(t, done, 20*time.Second, "Events to end after failover"); err != nil {
		t.Fatalf("Events: %v", err)
	}
	if got := rec.got(); !sameTypes(got, "snapshot", "snapshot", "masterChanged", "appRemoved") {
		t.Fatalf("events %v", got)
	}
}

func TestEventsIdleStreamReconnects(t *testing.T) {
	var conns atomic.Int32
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		if conns.Add(1) == 1 {
			writeEvents(w, evSnapshot)
			<-r.Context().Done() // silent: no heartbeat
			return
		}
		writeEvents(w, evSnapshot, evRemoved)
	})
	c := newTestClient(t, []string{m.URL()}, "", WithStreamIdleTimeout(300*time.Millisecond))
	var rec recorder
	if err := c.Events(context.Background(), "app-1", rec.handle); err != nil {
		t.Fatalf("Events: %v", err)
	}
	if got := rec.got(); !sameTypes(got, "snapshot", "snapshot", "appRemoved") {
		t.Fatalf("events %v", got)
	}
}

func TestEventsHandlerErrorAndCancel(t *testing.T) {
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, evSnapshot)
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				writeEvents(w, evBeat)
			}
		}
	})
	c := newTestClient(t, []string{m.URL()}, "")
	stop := errors.New("stop")
	err := c.Events(context.Background(), "app-1", func(wire.AppEvent) error { return stop })
	if err != stop {
		t.Fatalf("Events = %v, want the handler's error", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	done := make(chan error, 1)
	go func() { done <- c.Events(ctx, "app-1", rec.handle) }()
	testproc.Eventually(t, 10*time.Second, "the snapshot", func() bool { return len(rec.got()) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Events after cancel = %v", err)
	}
	if got := rec.got(); !sameTypes(got, "snapshot") {
		t.Fatalf("heartbeats reached the handler: %v", got)
	}
}

func TestEventsUnknownApp(t *testing.T) {
	m := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"no such app"}`, 404)
	})
	c := newTestClient(t, []string{m.URL()}, "")
	err := c.Events(context.Background(), "app-9", func(wire.AppEvent) error { return nil })
	if StatusCode(err) != 404 || m.count() != 1 {
		t.Fatalf("Events of an unknown app: %v after %d requests", err, m.count())
	}
}

// A master that freezes (SIGSTOP) keeps its connections open and says
// nothing. Its stream goes silent past the master's own promise
// (NextWithinMs) and new requests to it get no headers: the client gives
// up on it within about a second each way, moves to the next master, and
// tries the frozen one last from then on.
func TestEventsLeaveAFrozenMaster(t *testing.T) {
	thaw := make(chan struct{})
	defer close(thaw)
	var frozenHits atomic.Int32
	streamed := make(chan struct{})
	a := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		if frozenHits.Add(1) == 1 {
			writeEvents(w, wire.AppEvent{Type: wire.EventSnapshot, AppID: "app-1", NextWithinMs: 300})
			close(streamed)
		}
		<-thaw // frozen from here on: no line, no headers
	})
	var bHits atomic.Int32
	b := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		switch bHits.Add(1) {
		case 1:
			// A follower that no longer hears from the frozen leader
			// names none while the others elect one.
			httpx.WriteErr(w, r, &httpx.StatusError{Status: http.StatusServiceUnavailable, Code: wire.CodeNoLeader, Message: "no leader"})
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable) // electing
		default:
			writeEvents(w, evSnapshot, evChanged, evRemoved)
		}
	})
	c := newTestClient(t, []string{a.URL(), b.URL()}, "", WithStreamOpenTimeout(500*time.Millisecond))
	var rec recorder
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Events(context.Background(), "app-1", rec.handle) }()
	<-streamed
	if err := testproc.Receive(t, done, 20*time.Second, "Events to leave the frozen master"); err != nil {
		t.Fatalf("Events: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v to leave the frozen master (stream promise 300ms, open timeout 500ms)", took)
	}
	if got := rec.got(); !sameTypes(got, "snapshot", "snapshot", "masterChanged", "appRemoved") {
		t.Fatalf("events %v", got)
	}
	// The stream went silent: the frozen master is tried after the
	// other from then on, so it is not asked again.
	if n := frozenHits.Load(); n != 1 {
		t.Fatalf("frozen master asked %d times, want only the first stream", n)
	}
}

// A master that refused connections (it was restarting) may lead again a
// moment later: a follower's redirect to it is followed.
func TestRedirectFollowedToARecentlyRefusingMaster(t *testing.T) {
	leaderURL := testproc.ClosedURL(t) // refuses connections until it "restarted"
	var restarted atomic.Bool
	follower := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		if !restarted.Load() {
			httpx.WriteErr(w, r, &httpx.StatusError{Status: http.StatusServiceUnavailable, Code: wire.CodeNoLeader, Message: "no leader"})
			return
		}
		httpx.WriteErr(w, r, &httpx.StatusError{Status: http.StatusTemporaryRedirect, Code: wire.CodeNotLeader, Message: "not the leader", Leader: leaderURL})
	})
	c := newTestClient(t, []string{leaderURL, follower.URL()}, "")
	done := make(chan error, 1)
	go func() { done <- c.Events(context.Background(), "app-1", func(wire.AppEvent) error { return nil }) }()
	// Once the leader refused a connection (the client then asked the
	// follower), it listens again, and the follower names it.
	testproc.Eventually(t, 5*time.Second, "the client to ask the follower", func() bool { return follower.count() > 0 })
	l, err := net.Listen("tcp", strings.TrimPrefix(leaderURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeEvents(w, evSnapshot, evRemoved) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	restarted.Store(true)
	if err := testproc.Receive(t, done, suspectFor/2, "the redirect to the restarted leader to be followed"); err != nil {
		t.Fatalf("Events: %v", err)
	}
}
