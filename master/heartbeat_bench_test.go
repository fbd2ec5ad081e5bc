package master

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// serveMaster runs a master (m1, a Memory engine, elected at once) on a
// loopback port until tb ends, and returns it with its base URL.
func serveMaster(tb testing.TB, cfg Config) (*Master, string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cfg.ID, cfg.Advertise = "m1", "http://"+ln.Addr().String()
	m, err := New(cfg, persistence.NewMemory(), nil, election.NewSingle(cfg.ID), discardLogger(), nil)
	if err != nil {
		ln.Close()
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(ctx, ln)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	return m, cfg.Advertise
}

// registerHTTP registers worker id at the address of srv through the
// master's API, retrying while the master elects itself.
func registerHTTP(tb testing.TB, c *httpx.Client, base, id string, srv *httptest.Server) {
	tb.Helper()
	addr := srv.Listener.Addr().(*net.TCPAddr)
	req := wire.RegisterWorker{ID: id, Host: addr.IP.String(), Port: addr.Port, Address: srv.URL, Cores: 2, MemoryMB: 1024, Incarnation: id + "-1"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := httpx.Call(ctx, c, base, wire.MasterAPI.RegisterWorker, req)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("registering %s: %v", id, err)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline: the master is electing itself
	}
}

// fakeWorkerAPI is a worker's API that answers every request with {}.
func fakeWorkerAPI(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("{}")) }))
	tb.Cleanup(srv.Close)
	return srv
}

// BenchmarkWorkerHeartbeatHTTP is one worker's heartbeat through the
// master's whole HTTP stack, on a keep-alive connection, as a worker sends
// it: what the server's connection hooks and the route add to a
// heartbeat shows here.
func BenchmarkWorkerHeartbeatHTTP(b *testing.B) {
	_, base := serveMaster(b, Config{WorkerTimeout: time.Minute})
	c := httpx.NewClient("", 5*time.Second)
	registerHTTP(b, c, base, "w1", fakeWorkerAPI(b))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := httpx.Call(ctx, c, base, wire.MasterAPI.WorkerHeartbeat, wire.Heartbeat{}, "w1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNoteHeartbeatConn is what the heartbeat route adds to each
// accepted heartbeat on a connection that carried one before: the tag's
// check and the time of the heartbeat.
func BenchmarkNoteHeartbeatConn(b *testing.B) {
	h := &heartbeatConns{closed: func(string) {}, tagged: map[net.Conn]*heartbeatConn{}}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	ctx := context.WithValue(context.Background(), heartbeatConnKey{}, &heartbeatConn{conns: h, conn: c1})
	noteHeartbeatConn(ctx, "w1")
	b.ReportAllocs()
	for b.Loop() {
		noteHeartbeatConn(ctx, "w1")
	}
}
