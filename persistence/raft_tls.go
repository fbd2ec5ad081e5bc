package persistence

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/berth-cluster/berth/security"
)

// handshakeTimeout bounds a Raft connection's TLS handshake: a peer that
// connects and says nothing gives up its goroutine and socket after it.
const handshakeTimeout = 5 * time.Second

// tlsStream is a raft.StreamLayer over mutual TLS: both ends must hold a
// master certificate of the cluster's CA. A connection that fails the
// handshake (plain TCP, no certificate, another CA, a worker's or an
// operator's certificate) is closed before Raft reads a byte of it, so
// nothing it sends can depose a leader or write the log.
//
// Handshakes run each in its own goroutine, off the accept loop: done in
// Accept itself, one silent connection would hold back every master's
// connection behind it for handshakeTimeout, and a stream of them would
// keep the masters apart for good.
type tlsStream struct {
	ln        net.Listener
	advertise net.Addr
	server    *tls.Config
	client    *tls.Config
	log       *slog.Logger
	ctx       context.Context // ends at Close
	cancel    context.CancelFunc
	accepted  chan accepted
}

// accepted is what Accept hands Raft: a proven connection, or the
// listener's error for Raft's own back-off.
type accepted struct {
	conn net.Conn
	err  error
}

// newTLSStream listens on addr; advertise is the address the other masters
// dial, nil for the listener's own.
func newTLSStream(addr string, advertise net.Addr, t *security.TLS, log *slog.Logger) (*tlsStream, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &tlsStream{
		ln: ln, advertise: advertise, log: log, ctx: ctx, cancel: cancel,
		server:   t.ServerConfig(tls.RequireAndVerifyClientCert, security.RoleMaster),
		client:   t.ClientConfig(security.RoleMaster),
		accepted: make(chan accepted),
	}
	go s.serve()
	return s, nil
}

// serve accepts connections and starts their handshakes until Close.
func (s *tlsStream) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			// Out of file descriptors and the like: Raft logs it and backs
			// off before its next Accept, which paces this loop.
			s.deliver(accepted{err: err})
			continue
		}
		go s.handshake(conn)
	}
}

// handshake proves the peer a master of the CA, or drops the connection.
func (s *tlsStream) handshake(conn net.Conn) {
	tc := tls.Server(conn, s.server)
	ctx, cancel := context.WithTimeout(s.ctx, handshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("refused a Raft connection", "from", conn.RemoteAddr().String(), "err", err)
		}
		conn.Close()
		return
	}
	if !s.deliver(accepted{conn: tc}) {
		tc.Close()
	}
}

// deliver hands a to Accept; false once the stream is closed.
func (s *tlsStream) deliver(a accepted) bool {
	select {
	case s.accepted <- a:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// Accept returns the next connection whose handshake proved a master.
func (s *tlsStream) Accept() (net.Conn, error) {
	select {
	case a := <-s.accepted:
		return a.conn, a.err
	case <-s.ctx.Done():
		return nil, fmt.Errorf("raft stream: %w", net.ErrClosed)
	}
}

// Close stops accepting and aborts the handshakes under way.
func (s *tlsStream) Close() error {
	s.cancel()
	return s.ln.Close()
}

func (s *tlsStream) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.ln.Addr()
}

// Dial connects to another master and proves both ends before Raft uses
// the connection. The server must be a master whose certificate names the
// host Raft dials.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(string(address))
	if err != nil {
		return nil, fmt.Errorf("raft dial %s: %w", address, err)
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: s.client.Clone()}
	d.Config.ServerName = host
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", string(address))
	if err != nil {
		return nil, fmt.Errorf("raft dial %s: %w", address, err)
	}
	return conn, nil
}

// newTransport is Raft's transport: over mutual TLS when cfg has TLS, else
// plain TCP (which cmd/master refuses; tests of the engine use it).
func newTransport(cfg RaftConfig, advertise *net.TCPAddr, hlog hclog.Logger) (redialTransport, error) {
	if cfg.TLS == nil {
		t, err := raft.NewTCPTransportWithLogger(cfg.Addr, advertise, maxPool, 10*time.Second, hlog)
		return redialTransport{t}, err
	}
	// As the TCP transport: the others dial the address Raft hands them,
	// which a wildcard is not.
	if advertise.IP == nil || advertise.IP.IsUnspecified() {
		return redialTransport{}, fmt.Errorf("raft address %s: want the IP address or name the other masters reach, not a wildcard", cfg.Addr)
	}
	stream, err := newTLSStream(cfg.Addr, advertise, cfg.TLS, cfg.Logger)
	if err != nil {
		return redialTransport{}, err
	}
	return redialTransport{raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: maxPool, Timeout: 10 * time.Second, Logger: hlog,
	})}, nil
}
