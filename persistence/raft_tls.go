package persistence

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/berth-cluster/berth/security"
)

// handshakeTimeout bounds a Raft connection's TLS handshake: a peer that
// connects and says nothing must not hold an accept slot.
const handshakeTimeout = 5 * time.Second

// tlsStream is a raft.StreamLayer over mutual TLS: both ends must hold a
// master certificate of the cluster's CA. A connection that fails the
// handshake (plain TCP, no certificate, another CA, a worker's or an
// operator's certificate) is closed before Raft reads a byte of it, so
// nothing it sends can depose a leader or write the log.
type tlsStream struct {
	ln        net.Listener
	advertise net.Addr
	server    *tls.Config
	client    *tls.Config
	log       *slog.Logger
}

func newTLSStream(addr string, advertise net.Addr, t *security.TLS, log *slog.Logger) (*tlsStream, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &tlsStream{
		ln: ln, advertise: advertise, log: log,
		server: t.ServerConfig(tls.RequireAndVerifyClientCert, security.RoleMaster),
		client: t.ClientConfig(security.RoleMaster),
	}, nil
}

// Accept returns the next connection whose handshake proved a master; it
// drops the others (logging why) and keeps waiting.
func (s *tlsStream) Accept() (net.Conn, error) {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return nil, err
		}
		tc := tls.Server(conn, s.server)
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		err = tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			s.log.Warn("refused a Raft connection", "from", conn.RemoteAddr().String(), "err", err)
			conn.Close()
			continue
		}
		return tc, nil
	}
}

func (s *tlsStream) Close() error { return s.ln.Close() }

func (s *tlsStream) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.ln.Addr()
}

// Dial connects to another master and proves both ends before Raft uses
// the connection.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: s.client.Clone()}
	host, _, err := net.SplitHostPort(string(address))
	if err != nil {
		return nil, err
	}
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
func newTransport(cfg RaftConfig, advertise net.Addr, hlog hclog.Logger) (*raft.NetworkTransport, error) {
	if cfg.TLS == nil {
		return raft.NewTCPTransportWithLogger(cfg.Addr, advertise, 3, 10*time.Second, hlog)
	}
	stream, err := newTLSStream(cfg.Addr, advertise, cfg.TLS, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if advertise == nil || advertise.(*net.TCPAddr).IP.IsUnspecified() {
		stream.Close()
		return nil, errors.New("raft address must be a routable host:port")
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog,
	}), nil
}
