package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

const appID = "app-1"

// streamItem is what the test pushes down the app's event stream: an event,
// or drop to break the connection as a dying master would.
type streamItem struct {
	ev   wire.AppEvent
	drop bool
}

// fakeMaster registers one app and streams the events the test pushes.
type fakeMaster struct {
	srv *httptest.Server

	mu           sync.Mutex
	desc         *wire.AppDescription
	executors    []wire.ExecutorStatus // listed in each new stream's snapshot
	unregistered bool
	conns        int

	registered chan wire.AppDescription
	stream     chan streamItem
}

func newFakeMaster(t *testing.T) *fakeMaster {
	f := &fakeMaster{registered: make(chan wire.AppDescription, 1), stream: make(chan streamItem, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/apps", testproc.HandleJSON(func(_ *http.Request, d wire.AppDescription) (any, error) {
		f.mu.Lock()
		f.desc = &d
		f.mu.Unlock()
		f.registered <- d
		return wire.Submitted{ID: appID}, nil
	}))
	mux.HandleFunc("POST /v1/apps/"+appID+"/unregister", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.unregistered = true
		f.mu.Unlock()
		f.stream <- streamItem{ev: wire.AppEvent{Type: wire.EventAppRemoved, AppID: appID,
			App: &wire.AppStatus{ID: appID, State: wire.AppFinished}}}
		w.WriteHeader(200)
	})
	mux.HandleFunc("GET /v1/apps/"+appID+"/events", f.events)
	f.srv = httptest.NewServer(httpx.RequireSecret("cluster-secret", mux))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMaster) events(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.conns++
	snap := &wire.AppStatus{ID: appID, State: wire.AppRunning, Executors: append([]wire.ExecutorStatus(nil), f.executors...)}
	f.mu.Unlock()
	enc := json.NewEncoder(w)
	enc.Encode(wire.AppEvent{Type: wire.EventSnapshot, AppID: appID, App: snap})
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case it := <-f.stream:
			if it.drop {
				return
			}
			enc.Encode(it.ev)
			w.(http.Flusher).Flush()
		}
	}
}

// setExecutors sets the executors of the next snapshots.
func (f *fakeMaster) setExecutors(ids ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.executors = nil
	for _, id := range ids {
		f.executors = append(f.executors, wire.ExecutorStatus{ID: id, WorkerID: "w", Cores: 2, State: wire.ExecutorRunning})
	}
}

func (f *fakeMaster) wasUnregistered() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unregistered
}

// waitRegistered waits for the driver to register its app and open its
// event stream, whose first snapshot is then fixed.
func (f *fakeMaster) waitRegistered(t *testing.T) wire.AppDescription {
	t.Helper()
	d := testproc.Receive(t, f.registered, 20*time.Second, "the driver to register its app")
	testproc.Eventually(t, 20*time.Second, "the driver to open its event stream", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.conns > 0
	})
	return d
}

// testConfig is a small job against f, with quick client retries.
func testConfig(f *fakeMaster, tasks int) driverConfig {
	return driverConfig{
		masters: []string{f.srv.URL}, secret: "cluster-secret", name: "pi",
		tasks: tasks, samples: 20000, seed: 7, executorMemoryMB: 256,
		taskTimeout: time.Hour, host: "127.0.0.1", executable: "/opt/pi",
		clientOpts: []client.Option{client.WithBackoff(5*time.Millisecond, 50*time.Millisecond)},
	}
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
