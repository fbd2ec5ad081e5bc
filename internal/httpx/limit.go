package httpx

import (
	"net"
	"sync"
	"syscall"
)

// DefaultMaxConnections is a daemon's cap on open API connections when its
// flag is not set: three quarters of its file descriptor limit, the rest
// left to its files, children and Raft. Beyond the cap, new connections
// wait in the kernel's backlog instead of costing a descriptor each, so a
// flood of idle connections cannot starve the daemon of descriptors.
// (A fleet's heartbeats hold one keep-alive connection per worker: raise
// the descriptor limit with the fleet, not this cap alone.)
func DefaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1024
	}
	return max(int(min(lim.Cur, 1<<30)*3/4), 64)
}

// LimitListener accepts at most n connections at a time: Accept waits for
// one to close before it takes the next.
func LimitListener(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn gives its slot back once, at its first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
