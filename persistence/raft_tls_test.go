package persistence

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/security"
)

// tlsCluster is a 3-master Raft cluster over mutual TLS, with the CA's
// directory for the attackers' certificates.
func tlsCluster(t *testing.T) (*raftCluster, string) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := security.CreateCA(dir); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		if err := security.CreateCert(dir, security.RoleMaster, id, []string{"127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := security.CreateCert(dir, security.RoleWorker, "w1", []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	c := newRaftCluster(t, 3, func(cfg *RaftConfig) { cfg.TLS = loadTLS(t, dir, cfg.ID) })
	return c, dir
}

func loadTLS(t *testing.T, dir, name string) *security.TLS {
	m, err := security.Load(security.Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The attack of the security issue: a client that knows nothing sends
// AppendEntries at a higher term to the leader's Raft port. Over TLS it
// never reaches Raft, whatever the attacker holds short of a master
// certificate of the cluster's CA: the leader keeps its term and its
// leadership, and the cluster still commits.
func TestRaftOverTLSRefusesWhatIsNotAMaster(t *testing.T) {
	c, dir := tlsCluster(t)
	leader := c.leader()
	term := leader.Stats()["term"]
	other := filepath.Join(t.TempDir(), "other")
	if err := security.CreateCA(other); err != nil {
		t.Fatal(err)
	}
	if err := security.CreateCert(other, security.RoleMaster, "m9", []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}

	// Plain TCP, hashicorp/raft's own transport: the attack as found.
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var resp raft.AppendEntriesResponse
	err = plain.AppendEntries("m9", raft.ServerAddress(leader.Addr()), &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ID: []byte("m9"), Addr: []byte("127.0.0.1:1")}, Term: 1 << 40,
		Entries: []*raft.Log{{Index: 1 << 30, Term: 1 << 40, Type: raft.LogCommand, Data: []byte("{}")}},
	}, &resp)
	if err == nil {
		t.Errorf("a plain TCP AppendEntries got an answer: %+v", resp)
	}

	// TLS with what an attacker may hold: nothing, a worker's certificate,
	// another CA's master certificate.
	trustOnly := loadTLS(t, dir, "w1").ClientConfig().RootCAs
	for name, cfg := range map[string]*tls.Config{
		"no certificate":       {RootCAs: trustOnly},
		"a worker certificate": loadTLS(t, dir, "w1").ClientConfig(),
		"another CA's master":  loadTLS(t, other, "m9").ClientConfig(),
	} {
		cfg = cfg.Clone()
		cfg.ServerName = "127.0.0.1"
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", leader.Addr(), cfg)
		if err == nil {
			// TLS 1.3: the server's refusal arrives on the first read.
			conn.SetDeadline(time.Now().Add(2 * time.Second))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Errorf("%s: the Raft port kept the connection open", name)
		}
	}

	if got := leader.Stats()["term"]; got != term || !leader.IsLeader() {
		t.Fatalf("the leader's term went %s → %s (leading: %v)", term, got, leader.IsLeader())
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
