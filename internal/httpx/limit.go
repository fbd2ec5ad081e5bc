package httpx

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/berth-cluster/berth/wire"
)

// DefaultMaxConnections is a daemon's cap on open API connections when its
// flag is not set: three quarters of its file descriptor limit, the rest
// left to its files, children and Raft (and to the few connections
// LimitListener keeps for health checks beyond the cap). At the cap, a new
// connection closes the oldest one that is not serving a request, so a
// flood of idle connections cannot hold the cap; when every one is serving
// a request, new connections wait in the kernel's backlog instead of
// costing a descriptor each, so a flood cannot starve the daemon of
// descriptors either. (A fleet's heartbeats hold one keep-alive connection
// per worker: raise the descriptor limit with the fleet, not this cap
// alone.)
func DefaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1024
	}
	return max(int(min(lim.Cur, 1<<30)*3/4), 64)
}

// reserveFor is how many connections LimitListener takes beyond a cap of n
// when every connection under the cap is serving a request. They answer
// only health checks, so their number is set by the probes to let in at
// once (a liveness and a readiness probe, a load balancer, an operator's
// curl: at least 4) rather than by the cap. A larger cap gets a few more
// (n/16) because, when the reserve is full, a new connection closes the
// oldest silent one: the more slots, the more sockets a flood must open
// before it reaches a probe still sending its request. At most 64 keeps
// the reserve a small fixed cost, taken from the quarter of the
// descriptors DefaultMaxConnections leaves to files and Raft.
func reserveFor(n int) int { return min(max(n/16, 4), 64) }

// LimitListener caps the connections ln hands out at n, and keeps the cap
// from being held by connections that are not serving a request:
//
//   - Under the cap, a new connection is accepted.
//   - At the cap, a new connection closes the oldest connection that is
//     not serving a request: one that has sent nothing since it opened
//     first, then one idle since its last answer (keep-alive). One
//     mid-way through sending a request (under TLS, its handshake counts)
//     is closed only when every slot, reserve included, is taken. A
//     connection serving a request, or hijacked, is never closed.
//   - When every connection under the cap is serving a request, a new one
//     is taken into a reserve of reserveFor(n) connections beyond the cap,
//     which answers only the health checks (GET /healthz and /readyz),
//     refuses anything else with 503, and closes after its answer: long
//     requests filling the cap (event streams) cannot starve the probes.
//   - With the reserve full too, the listener closes the oldest connection
//     not serving a request (the last one accepted excepted, which has had
//     no time to send its request) to keep a slot for the next; if every
//     one is serving, Accept waits for one to close and new connections
//     wait in the kernel's backlog, costing no descriptor.
//
// So at most n+reserveFor(n) connections are ever open, the one being
// accepted included. Telling which connections serve a request, and what
// the reserve may answer, takes the server's hooks: NewServer installs
// them. Served by another server, no connection is ever closed and the
// reserve answers every route, as plain extra slots.
func LimitListener(ln net.Listener, n int) net.Listener {
	n = max(n, 1)
	return &limitListener{Listener: ln, n: n, slots: n + reserveFor(n), closed: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	n         int // the cap: connections that may serve any route
	slots     int // the cap and the reserve: connections that may be open
	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	held     int // connections open (evicted ones until closed) and the one being accepted
	underCap int // connections open within the cap, evicted ones left out
	// capped and reserve list the connections not serving a request, in
	// the order they became so, for eviction.
	capped, reserve quietConns
	newest          *limitedConn  // the last accepted: never closed to free a slot
	seq             uint64        // orders connections across the lists
	wake            chan struct{} // closed when a slot may have freed, while an Accept waits for one
}

// quietConns are the connections of one pool (under the cap, or the
// reserve) that are not serving a request, by eviction preference.
type quietConns struct {
	fresh     list.List // opened, nothing received yet
	idle      list.List // answered, nothing received since
	receiving list.List // a request partly received
}

// tiers lists a pool's lists in the order their connections are closed.
func (q *quietConns) tiers() [3]*list.List { return [3]*list.List{&q.fresh, &q.idle, &q.receiving} }

func (l *limitListener) Accept() (net.Conn, error) {
	if err := l.takeSlot(); err != nil {
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.mu.Lock()
		l.held--
		l.notifyLocked()
		l.mu.Unlock()
		return nil, err
	}
	lc, victim := l.admit(c)
	if victim != nil {
		victim.Close()
	}
	return lc, nil
}

// takeSlot counts the connection about to be accepted, first closing a
// connection that serves no request if every slot is taken, or waiting for
// one to close.
func (l *limitListener) takeSlot() error {
	for {
		l.mu.Lock()
		if l.held < l.slots {
			l.held++
			l.mu.Unlock()
			return nil
		}
		victim := l.oldestQuietLocked(l.newest, 3, &l.capped, &l.reserve)
		var wake chan struct{}
		if victim != nil {
			l.evictLocked(victim)
		} else {
			if l.wake == nil {
				l.wake = make(chan struct{})
			}
			wake = l.wake
		}
		l.mu.Unlock()
		if victim != nil {
			victim.Close() // frees its slot: take it on the next turn
			continue
		}
		select {
		case <-wake:
		case <-l.closed:
			return net.ErrClosed
		}
	}
}

// admit places c, already counted in held, under the cap or in the
// reserve, and returns the connection it displaces, to be closed.
func (l *limitListener) admit(c net.Conn) (lc *limitedConn, victim *limitedConn) {
	lc = &limitedConn{Conn: c, l: l, counted: true}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.underCap == l.n {
		// Only a connection that sent nothing, or is idle: one receiving a
		// request (a TLS handshake, say) is left to finish it, and the new
		// one goes to the reserve instead.
		victim = l.oldestQuietLocked(nil, 2, &l.capped)
		if victim != nil {
			l.evictLocked(victim)
		} else {
			// held counted c against the n+reserve slots and the cap is
			// full: the reserve has room for it.
			lc.reserve = true
		}
	}
	if !lc.reserve {
		l.underCap++
	}
	l.newest = lc
	return lc, victim
}

// oldestQuietLocked is the connection to close first among pools, spare
// excepted: from the first of the first tiers tiers that has one, the one
// longest in it.
func (l *limitListener) oldestQuietLocked(spare *limitedConn, tiers int, pools ...*quietConns) *limitedConn {
	for tier := range tiers {
		var best *limitedConn
		for _, p := range pools {
			for e := p.tiers()[tier].Front(); e != nil; e = e.Next() {
				if c := e.Value.(*limitedConn); c != spare {
					if best == nil || c.since < best.since {
						best = c
					}
					break
				}
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}

// evictLocked takes c out of the connections within the cap and out of
// the lists, so that no one else picks it or counts on it; its slot in
// held is given back once the caller has closed it.
func (l *limitListener) evictLocked(c *limitedConn) {
	if !c.counted {
		return
	}
	c.counted = false
	l.unlistLocked(c)
	if !c.reserve {
		l.underCap--
	}
}

func (l *limitListener) pool(c *limitedConn) *quietConns {
	if c.reserve {
		return &l.reserve
	}
	return &l.capped
}

// listLocked moves c to the end of to: it serves no request, since now.
func (l *limitListener) listLocked(c *limitedConn, to *list.List) {
	l.unlistLocked(c)
	l.seq++
	c.since, c.in, c.elem = l.seq, to, to.PushBack(c)
	l.notifyLocked()
}

func (l *limitListener) unlistLocked(c *limitedConn) {
	if c.in != nil {
		c.in.Remove(c.elem)
		c.in, c.elem = nil, nil
	}
}

// notifyLocked wakes an Accept waiting for a slot: one may have freed.
func (l *limitListener) notifyLocked() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// setState follows the server's view of c (ConnState).
func (l *limitListener) setState(c *limitedConn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.counted {
		return // evicted or closed: in no list any more
	}
	switch state {
	case http.StateNew:
		c.received.Store(false)
		l.listLocked(c, &l.pool(c).fresh)
	case http.StateIdle:
		c.received.Store(false)
		l.listLocked(c, &l.pool(c).idle)
	case http.StateActive, http.StateHijacked:
		c.received.Store(true) // its reads are a request's: nothing to track
		l.unlistLocked(c)
	case http.StateClosed:
		l.unlistLocked(c)
	}
}

// receiving notes that c, serving no request, has started to receive one:
// it is closed after the connections that sent nothing (only the first
// bytes since it went quiet take the lock).
func (l *limitListener) receiving(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.received.Load() {
		return
	}
	c.received.Store(true)
	if c.counted && c.in != nil && c.in != &l.pool(c).receiving {
		l.listLocked(c, &l.pool(c).receiving)
	}
}

func (l *limitListener) release(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evictLocked(c) // nothing if it was evicted
	l.held--
	l.notifyLocked()
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn is a connection of a LimitListener; it gives its slot back
// once, at its first Close.
type limitedConn struct {
	net.Conn
	l         *limitListener
	reserve   bool        // beyond the cap: answers health checks only; set before Accept returns it
	received  atomic.Bool // bytes came in since it last served no request (or it serves one)
	closeOnce sync.Once

	// Guarded by l.mu.
	counted bool          // neither evicted nor closed: counted in underCap (unless reserve), may be listed
	in      *list.List    // the list it is in while it serves no request, or nil
	elem    *list.Element // its element in in
	since   uint64        // when it entered in
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.received.Load() {
		c.l.receiving(c)
	}
	return n, err
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.l.release(c) })
	return err
}

// asLimited finds the limitedConn under nc, which the server may see
// wrapped (in a *tls.Conn), or nil.
func asLimited(nc net.Conn) *limitedConn {
	for range 4 {
		switch c := nc.(type) {
		case *limitedConn:
			return c
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// trackConnState is the server's ConnState hook for LimitListener: it
// tells the listener which connections serve a request.
func trackConnState(nc net.Conn, state http.ConnState) {
	if c := asLimited(nc); c != nil {
		c.l.setState(c, state)
	}
}

type reserveConnKey struct{}

// tagReserveConn is the server's ConnContext hook for LimitListener: it
// marks the requests of a reserve connection for reserveServesProbesOnly.
func tagReserveConn(ctx context.Context, nc net.Conn) context.Context {
	if c := asLimited(nc); c != nil && c.reserve {
		return context.WithValue(ctx, reserveConnKey{}, c)
	}
	return ctx
}

// probes are the routes a reserve connection answers: GET (or HEAD) of
// the health and readiness checks.
var probes = map[string]bool{
	wire.MasterAPI.Health.Pattern: true,
	wire.MasterAPI.Ready.Pattern:  true,
	wire.WorkerAPI.Health.Pattern: true,
}

// reserveServesProbesOnly answers the requests of a connection taken
// beyond the cap (LimitListener): the health checks through h, anything
// else with 503, and closes it after its answer to free its slot.
func reserveServesProbesOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(reserveConnKey{}).(*limitedConn)
		if c == nil {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && probes[r.URL.Path] {
			h.ServeHTTP(w, r)
			return
		}
		WriteErr(w, r, Coded(http.StatusServiceUnavailable, wire.CodeLimitReached,
			"every one of the %d connections --max-connections allows is serving a request; this connection, beyond the cap, answers only the health checks: retry, or raise --max-connections", c.l.n))
	})
}
