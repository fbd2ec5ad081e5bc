package persistence

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/testkit/testproc"
)

// testPKI makes a CA in a temp dir and a certificate for 127.0.0.1 per
// name given, of role.
func testPKI(t testing.TB, role security.Role, names ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tls")
	if err := security.CreateCA(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if err := security.CreateCert(dir, role, name, []string{"127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadTLS(t testing.TB, dir, name string) *security.TLS {
	t.Helper()
	m, err := security.Load(security.Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// dialOnly is the stream of an attacker's Raft transport: it dials with
// cfg and accepts nothing.
type dialOnly struct {
	cfg    *tls.Config
	once   sync.Once
	closed chan struct{}
}

func (d *dialOnly) Accept() (net.Conn, error) { <-d.closed; return nil, net.ErrClosed }
func (d *dialOnly) Close() error              { d.once.Do(func() { close(d.closed) }); return nil }
func (d *dialOnly) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (d *dialOnly) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), d.cfg)
}

// tlsAttacker is a Raft transport that speaks TLS with cfg. It takes any
// server: an attacker only wants in, and so the refusal is the server's.
func tlsAttacker(cfg *tls.Config) *raft.NetworkTransport {
	cfg = cfg.Clone()
	cfg.InsecureSkipVerify = true
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: &dialOnly{cfg: cfg, closed: make(chan struct{})}, MaxPool: 1, Timeout: 2 * time.Second,
		Logger: hclog.NewNullLogger(),
	})
}

// deposeAndWrite is the attack of the security issue: an AppendEntries at
// a much higher term that extends the leader's log with a BumpEpoch and
// commits it. Whoever answers it steps down and applies the entry.
func deposeAndWrite(t *testing.T, attacker *raft.NetworkTransport, leader *Raft) (raft.AppendEntriesResponse, error) {
	t.Helper()
	// The leader's own entries (its no-op) applied first: an attack read
	// against a log still growing would overwrite a committed entry, and
	// its own would then never apply.
	if err := leader.Barrier(context.Background()); err != nil {
		t.Fatalf("barrier before the attack: %v", err)
	}
	stat := func(key string) uint64 {
		n, err := strconv.ParseUint(leader.Stats()[key], 10, 64)
		if err != nil {
			t.Fatalf("raft stat %s: %v", key, err)
		}
		return n
	}
	term, last, lastTerm := stat("term")+100, stat("last_log_index"), stat("last_log_term")
	data, err := Encode([]Command{BumpEpoch()})
	if err != nil {
		t.Fatal(err)
	}
	var resp raft.AppendEntriesResponse
	err = attacker.AppendEntries("m9", raft.ServerAddress(leader.Addr()), &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("m9"), Addr: []byte("127.0.0.1:1")},
		Term:      term, PrevLogEntry: last, PrevLogTerm: lastTerm, LeaderCommitIndex: last + 1,
		Entries: []*raft.Log{{Index: last + 1, Term: term, Type: raft.LogCommand, Data: data}},
	}, &resp)
	return resp, err
}

// The control: over plain TCP the attack works, so the TLS test's attack
// is one that would show.
func TestRaftOverTCPFallsToTheAttack(t *testing.T) {
	leader := newRaftCluster(t, 1, nil).leader()
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if resp, err := deposeAndWrite(t, plain, leader); err != nil || !resp.Success {
		t.Fatalf("plain TCP attack: %+v %v", resp, err)
	}
	testproc.Eventually(t, 20*time.Second, "the attacker's entry applied", func() bool {
		s, _ := leader.Load(context.Background())
		return s.Epoch == 1
	})
}

// Over TLS the attack never reaches Raft, whatever the attacker holds short
// of a master certificate of the cluster's CA: the handshake refuses each
// (the leader logs why), the leader keeps its term and leadership, nothing
// is applied, and the cluster still commits.
func TestRaftOverTLSRefusesWhatIsNotAMaster(t *testing.T) {
	dir := testPKI(t, security.RoleMaster, "m1", "m2", "m3")
	if err := security.CreateCert(dir, security.RoleWorker, "w1", []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	other := testPKI(t, security.RoleMaster, "m9")
	var logs testproc.Buffer
	c := newRaftCluster(t, 3, func(cfg *RaftConfig) {
		cfg.TLS = loadTLS(t, dir, cfg.ID)
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	leader := c.leader()
	term := leader.Stats()["term"]

	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	attackers := map[string]*raft.NetworkTransport{
		"plain TCP":            plain,
		"TLS, no certificate":  tlsAttacker(&tls.Config{}),
		"a worker certificate": tlsAttacker(loadTLS(t, dir, "w1").ClientConfig()),
		"another CA's master":  tlsAttacker(loadTLS(t, other, "m9").ClientConfig()),
	}
	for name, a := range attackers {
		resp, err := deposeAndWrite(t, a, leader)
		a.Close()
		var ne net.Error
		switch {
		case err == nil:
			t.Errorf("%s: the leader answered the attack: %+v", name, resp)
		case errors.As(err, &ne) && ne.Timeout():
			t.Errorf("%s: the Raft port kept the connection open: %v", name, err)
		}
	}
	// The leader refused each in the handshake, for the reason it has.
	for _, why := range []string{"does not look like a TLS handshake", "didn't provide a certificate",
		"the peer is a worker certificate", "unknown authority"} {
		testproc.Eventually(t, 5*time.Second, "the refusal "+why+" logged", func() bool {
			return strings.Contains(logs.String(), why)
		})
	}

	if got := leader.Stats()["term"]; got != term || !leader.IsLeader() {
		t.Fatalf("the leader's term went %s → %s (leading: %v)", term, got, leader.IsLeader())
	}
	if s, _ := leader.Load(context.Background()); s.Epoch != 0 {
		t.Fatalf("an attacker's entry was applied: epoch %d", s.Epoch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := leader.Write(ctx, []Command{BumpEpoch()}); err != nil {
		t.Fatal(err)
	}
	c.converged(func(s *State) bool { return s.Epoch == 1 })
	// Nor does it later: the leader stays, in the same term.
	if poll.Within(context.Background(), time.Second, 50*time.Millisecond, func() bool {
		return !leader.IsLeader() || leader.Stats()["term"] != term
	}) {
		t.Errorf("after the attacks the term went %s → %s (leading: %v)", term, leader.Stats()["term"], leader.IsLeader())
	}
}

// A connection that opens and says nothing does not hold back a master's
// behind it; closing the stream ends both Accept and its handshake.
func TestTLSStreamHandshakesOffTheAcceptLoop(t *testing.T) {
	dir := testPKI(t, security.RoleMaster, "m1", "m2")
	s, err := newTLSStream("127.0.0.1:0", nil, loadTLS(t, dir, "m1"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	silent, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	peer := &tlsStream{client: loadTLS(t, dir, "m2").ClientConfig(security.RoleMaster)}
	go func() {
		if conn, err := peer.Dial(raft.ServerAddress(s.Addr().String()), 2*time.Second); err == nil {
			defer conn.Close()
			conn.Read(make([]byte, 1)) // until the test ends
		}
	}()
	type result struct {
		conn net.Conn
		err  error
	}
	accepted := make(chan result, 1)
	go func() { conn, err := s.Accept(); accepted <- result{conn, err} }()
	r := testproc.Receive(t, accepted, handshakeTimeout/2, "the master's connection, with a silent one before it")
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.conn.Close()
	cs := r.conn.(*tls.Conn).ConnectionState()
	if id, ok := security.PeerIdentity(&cs); !ok || id != (security.Identity{Role: security.RoleMaster, Name: "m2"}) {
		t.Errorf("accepted peer %+v (%v)", id, ok)
	}

	go func() { conn, err := s.Accept(); accepted <- result{conn, err} }()
	s.Close()
	if r := testproc.Receive(t, accepted, 2*time.Second, "Accept to end at Close"); !errors.Is(r.err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v %v", r.conn, r.err)
	}
	silent.SetReadDeadline(time.Now().Add(2 * time.Second))
	var ne net.Error
	if _, err := silent.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the silent connection outlived Close: %v", err)
	}
}
