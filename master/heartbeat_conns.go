package master

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// The edge of worker_probe.go: the server notices that a connection a
// worker's session (its heartbeats, chiefly) came on has closed, and the
// probes are made.
//
// The master serves HTTP/1.1 only, TLS included: its TLS listener offers
// no ALPN protocol, so a client that would speak h2 falls back. A
// worker's client then holds one or two keep-alive connections to the
// leader (Go's transport keeps two idle ones per host), and its
// registration, latest state and heartbeats ride whichever is free.
// Every connection one of those was accepted on is tagged with the
// worker; a tagged connection's close is the hint. Requests on one
// HTTP/1.1 connection are over before its close is reported, so a tag
// never outlives its connection.

// idleCloseAfter: a tagged connection that closes after carrying nothing
// of its worker's for this long was most likely closed for being idle (the
// server's httpx.IdleTimeout, a client's idle timeout, 90 s by default),
// which a worker heartbeating less often than that sees at every
// heartbeat: that close is not worth a probe. A worker that dies closes
// its connection within a heartbeat interval of its last heartbeat.
var idleCloseAfter = min(httpx.IdleTimeout, 90*time.Second) * 9 / 10

// heartbeatConns follows the connections of one server.
type heartbeatConns struct {
	// closed is told a worker's tagged connection closed; it runs on the
	// server's goroutine, so it must not block.
	closed func(worker string)

	mu     sync.Mutex
	tagged map[net.Conn]*heartbeatConn // connections a worker's request was accepted on
}

// heartbeatConn is one connection of the server, in its requests' context.
type heartbeatConn struct {
	conns  *heartbeatConns
	conn   net.Conn
	worker atomic.Pointer[string] // whose requests it carried last
	last   atomic.Int64           // when, in Unix nanoseconds
}

type heartbeatConnKey struct{}

// watchHeartbeatConns adds its hooks to srv's, which run first
// (httpx.NewServer's connection limit needs its own), and calls closed
// when a connection a worker's request was accepted on closes.
func watchHeartbeatConns(srv *http.Server, closed func(worker string)) *heartbeatConns {
	h := &heartbeatConns{closed: closed, tagged: map[net.Conn]*heartbeatConn{}}
	prevContext, prevState := srv.ConnContext, srv.ConnState
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevContext != nil {
			ctx = prevContext(ctx, c)
		}
		return context.WithValue(ctx, heartbeatConnKey{}, &heartbeatConn{conns: h, conn: c})
	}
	srv.ConnState = func(c net.Conn, state http.ConnState) {
		if prevState != nil {
			prevState(c, state)
		}
		switch state {
		case http.StateClosed:
			h.gone(c, true)
		case http.StateHijacked:
			h.gone(c, false) // no longer the server's: its close says nothing
		}
	}
	return h
}

// noteHeartbeatConn tags the connection of a request of worker's that was
// accepted (fromWorker). It costs a heartbeat two atomic operations and
// the time (and a lock on a connection's first request).
func noteHeartbeatConn(ctx context.Context, worker string) {
	hc, _ := ctx.Value(heartbeatConnKey{}).(*heartbeatConn)
	if hc == nil {
		return // not served by a watched server (a test's handler)
	}
	hc.last.Store(time.Now().UnixNano())
	if p := hc.worker.Load(); p != nil && *p == worker {
		return
	}
	tag := worker // a copy: taking worker's own address would move it to the heap at every call
	hc.worker.Store(&tag)
	hc.conns.mu.Lock()
	hc.conns.tagged[hc.conn] = hc
	hc.conns.mu.Unlock()
}

// gone forgets c; if it was tagged and closed, not for being idle, the
// worker is named to closed.
func (h *heartbeatConns) gone(c net.Conn, closed bool) {
	h.mu.Lock()
	hc := h.tagged[c]
	delete(h.tagged, c)
	h.mu.Unlock()
	if hc == nil || !closed {
		return
	}
	if idle := time.Since(time.Unix(0, hc.last.Load())); idle >= idleCloseAfter {
		return
	}
	h.closed(*hc.worker.Load())
}

// fromWorker wraps the handler of a route a worker calls on its own
// session (its registration, its latest state, its heartbeats): once the
// request is accepted, its connection is tagged with the worker that
// worker names ("" for none). A worker killed before its first heartbeat
// (which comes a quarter of the timeout after it registers) is noticed
// too.
func fromWorker[Req, Resp any](h func(*http.Request, Req) (Resp, error), worker func(r *http.Request, in Req, out Resp) string) func(*http.Request, Req) (Resp, error) {
	return func(r *http.Request, in Req) (Resp, error) {
		out, err := h(r, in)
		if err == nil {
			if id := worker(r, in, out); id != "" {
				noteHeartbeatConn(r.Context(), id)
			}
		}
		return out, err
	}
}

// pathWorker names the worker of a route's path, pathWorkerUnlessReconnect
// too but not one the master told to register again (it does not know
// it).
func pathWorker[Req, Resp any](r *http.Request, _ Req, _ Resp) string { return r.PathValue("id") }

func pathWorkerUnlessReconnect(r *http.Request, _ wire.Heartbeat, reply wire.HeartbeatReply) string {
	if reply.Reconnect {
		return ""
	}
	return r.PathValue("id")
}

// registeringWorker names the worker a registration registers.
func registeringWorker(_ *http.Request, req wire.RegisterWorker, _ wire.RegisteredWorker) string {
	return req.ID
}

// watchWorkerConns installs the hooks on the master's server: a closed
// heartbeat connection goes to the loop, which decides (a follower, or a
// master shutting down, whose closes are its own doing, probes nothing).
func (m *Master) watchWorkerConns(srv *http.Server) {
	watchHeartbeatConns(srv, func(worker string) {
		if m.lease.handingOver.Load() {
			return
		}
		m.post(func(c *core) { c.heartbeatConnClosed(worker) })
	})
}

// probeWorker implements effects: after p.delay, GET the worker's
// /healthz on a connection of its own, and give the loop the answer. (A
// bare TCP connect would do, but a TLS worker logs every connection that
// closes before its handshake.) At most maxProbeSequences run at once.
func (m *Master) probeWorker(p probeRequest) {
	go func() {
		t := time.NewTimer(p.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-m.stopped:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		res := probeAddress(ctx, m.prober, p.url)
		m.post(func(c *core) { c.probeDone(p, res) })
	}()
}

// newProber is the client of the probes: the worker client's TLS and
// secret, but a new connection every time, never one pooled to the worker
// before it died.
func newProber(cfg Config) *httpx.Client {
	c := cfg.workerClient(probeTimeout)
	if tr, ok := c.HTTP.Transport.(*http.Transport); ok {
		tr.DisableKeepAlives = true
	}
	return c
}

// probeAddress asks base's GET /healthz and says what came back: refused
// (nothing listens: the host answered the connection with a reset),
// silent (no connection within ctx, or no route to it), or answered
// (something accepted the connection, whatever it said then).
func probeAddress(ctx context.Context, c *httpx.Client, base string) probeResult {
	resp, err := c.Open(ctx, http.MethodGet, base+wire.WorkerAPI.Health.Path(), nil)
	if err == nil {
		resp.Body.Close()
		return probeResult{outcome: probeAnswered}
	}
	var se *httpx.StatusError
	var op *net.OpError
	switch {
	case errors.As(err, &se):
		return probeResult{outcome: probeAnswered, err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return probeResult{outcome: probeRefused, err: err}
	case errors.As(err, &op) && op.Op == "dial", ctx.Err() != nil:
		return probeResult{outcome: probeSilent, err: err}
	}
	return probeResult{outcome: probeAnswered, err: fmt.Errorf("connected, then: %w", err)}
}
