package persistence

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/berth-cluster/berth/security"
)

// peerProcess is a Raft peer's transport that can die as a process does:
// its listener and every connection it accepted closed at once (kill -9),
// after which a new one listens on the same address (the restart).
type peerProcess struct {
	stream raft.StreamLayer
	mu     sync.Mutex
	conns  []net.Conn
	trans  *raft.NetworkTransport
	done   chan struct{}
}

// streamOn listens on addr ("127.0.0.1:0" for any port) over plain TCP or
// berth's mutual TLS.
type streamOn func(t *testing.T, addr string) raft.StreamLayer

func startPeer(t *testing.T, addr string, listen streamOn) *peerProcess {
	t.Helper()
	p := &peerProcess{stream: listen(t, addr), done: make(chan struct{})}
	p.trans = raft.NewNetworkTransport(p, maxPool, 2*time.Second, io.Discard)
	go p.answer()
	return p
}

// answer grants every vote and accepts every append, as a peer would.
func (p *peerProcess) answer() {
	for {
		select {
		case rpc := <-p.trans.Consumer():
			switch rpc.Command.(type) {
			case *raft.RequestVoteRequest:
				rpc.Respond(&raft.RequestVoteResponse{Granted: true}, nil)
			case *raft.AppendEntriesRequest:
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			case *raft.TimeoutNowRequest:
				rpc.Respond(&raft.TimeoutNowResponse{}, nil)
			}
		case <-p.done:
			return
		}
	}
}

func (p *peerProcess) Accept() (net.Conn, error) {
	c, err := p.stream.Accept()
	if err == nil {
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
	}
	return c, err
}
func (p *peerProcess) Close() error   { return p.stream.Close() }
func (p *peerProcess) Addr() net.Addr { return p.stream.Addr() }
func (p *peerProcess) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return p.stream.Dial(address, timeout)
}

// kill ends the peer as kill -9 does: the kernel closes its sockets.
func (p *peerProcess) kill() {
	close(p.done)
	p.trans.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// fillPool leaves maxPool connections from client to target pooled: as
// many RPCs at once, each on a connection of its own, all returned.
func fillPool(t *testing.T, client raft.Transport, target raft.ServerAddress) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, maxPool)
	for range maxPool {
		wg.Go(func() {
			var resp raft.AppendEntriesResponse
			errs <- client.AppendEntries("peer", target, &raft.AppendEntriesRequest{}, &resp)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A candidate whose pool holds connections to a peer's previous process
// gets that peer's vote (and a handover's TimeoutNow gets through) from its
// new process in the same round: the RPC is sent again over a fresh
// connection. The library's transport alone loses the vote (EOF), which
// shows the test reproduces what the masters' logs showed (issue 21).
func TestAVoteReachesAPeerThatRestarted(t *testing.T) {
	pki := testPKI(t, security.RoleMaster, "m1", "m2")
	plain := func(t *testing.T, addr string) raft.StreamLayer {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return tcpStream{ln}
	}
	overTLS := func(t *testing.T, addr string) raft.StreamLayer {
		if addr == "127.0.0.1:0" {
			addr = freeAddr(t) // the stream needs its address to advertise
		}
		s, err := newTLSStream(addr, tcpAddr(t, addr), loadTLS(t, pki, "m2"), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name   string
		listen streamOn
		tls    bool
		berths bool
	}{
		{"the library's transport", plain, false, false},
		{"berth's", plain, false, true},
		{"the library's transport over TLS", overTLS, true, false},
		{"berth's over TLS", overTLS, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			peer := startPeer(t, "127.0.0.1:0", c.listen)
			addr := raft.ServerAddress(peer.Addr().String())
			cfg := RaftConfig{Addr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)}
			if c.tls {
				cfg.TLS = loadTLS(t, pki, "m1")
				cfg.Addr = freeAddr(t)
			}
			trans, err := newTransport(cfg, tcpAddr(t, cfg.Addr), hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer trans.Close()
			var client raft.Transport = trans
			if !c.berths {
				client = trans.NetworkTransport
			}
			fillPool(t, client, addr)
			peer.kill()
			restarted := startPeer(t, string(addr), c.listen)
			defer func() { restarted.kill() }()
			for _, rpc := range []struct {
				name string
				call func() error
			}{
				{"RequestVote", func() error {
					var resp raft.RequestVoteResponse
					err := client.RequestVote("peer", addr, &raft.RequestVoteRequest{Term: 2}, &resp)
					if err == nil && !resp.Granted {
						t.Error("the vote was answered but not granted")
					}
					return err
				}},
				{"TimeoutNow", func() error {
					var resp raft.TimeoutNowResponse
					return client.TimeoutNow("peer", addr, &raft.TimeoutNowRequest{}, &resp)
				}},
			} {
				err := rpc.call()
				if c.berths && err != nil {
					t.Errorf("%s to the restarted peer: %v; want it answered by the new process", rpc.name, err)
				}
				if !c.berths {
					if err == nil {
						t.Errorf("%s over a dead pooled connection succeeded: the test no longer reproduces the stale pool", rpc.name)
					}
					break // the stale connections are spent now
				}
				fillPool(t, client, addr)
				restarted.kill()
				restarted = startPeer(t, string(addr), c.listen)
			}
		})
	}
}

// tcpStream is a plain TCP raft.StreamLayer on ln.
type tcpStream struct{ net.Listener }

func (s tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

func tcpAddr(t *testing.T, addr string) *net.TCPAddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// deadConnection tells a dead connection from a slow or absent peer: only
// the first is worth an immediate second attempt.
func TestDeadConnectionErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, refused := net.Dial("tcp", addr)
	server, client := net.Pipe()
	client.SetReadDeadline(time.Now())
	_, timeout := client.Read(make([]byte, 1))
	server.Close()
	client.SetReadDeadline(time.Time{})
	_, eof := client.Read(make([]byte, 1))
	for _, c := range []struct {
		err  error
		dead bool
	}{{refused, false}, {timeout, false}, {eof, true}, {net.ErrClosed, true}} {
		if got := deadConnection(c.err); got != c.dead {
			t.Errorf("deadConnection(%v) = %v, want %v", c.err, got, c.dead)
		}
	}
}

// Replication runs without a pipeline (see redialTransport): Raft falls
// back to one AppendEntries at a time when the transport says so.
func TestReplicationWithoutAPipeline(t *testing.T) {
	var tr redialTransport
	if _, err := tr.AppendEntriesPipeline("m2", "127.0.0.2:1"); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline: %v, want raft.ErrPipelineReplicationNotSupported", err)
	}
}

// DiskFull reads the Raft directory's free space: a directory on a file
// system with room is not full, and one that is gone is not known full.
func TestRaftDiskFull(t *testing.T) {
	r := &Raft{cfg: RaftConfig{Dir: t.TempDir()}}
	if r.DiskFull() {
		t.Error("a temporary directory with room says full")
	}
	r.cfg.Dir = filepath.Join(t.TempDir(), "gone")
	if r.DiskFull() {
		t.Error("a directory that does not exist says full")
	}
}
