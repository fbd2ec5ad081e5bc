package e2e

// The Raft attacks of the security issue, against the real master binary:
// persistence's own tests make them against the package, this one against
// the port a master listens on.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// raftFigures is a master's GET /v1/raft/status.
func raftFigures(m *testcluster.Master) (wire.RaftFigures, error) {
	var f wire.RaftFigures
	a, err := call(http.MethodGet, m.URL+wire.MasterAPI.RaftStatus.Path(), secret, nil)
	if err != nil {
		return f, err
	}
	if a.status != http.StatusOK {
		return f, fmt.Errorf("GET /v1/raft/status: %d %s", a.status, a.body)
	}
	return f, json.Unmarshal([]byte(a.body), &f)
}

// raftHandshake opens a TLS connection to a Raft address with cfg and
// returns how it ended: nil never, a remote TLS alert when the master
// refused the certificate, a timeout when the master took the connection
// and waits for Raft's first RPC.
func raftHandshake(addr string, cfg *tls.Config) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	cfg = cfg.Clone()
	cfg.ServerName = host
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	// TLS 1.3: the server's verdict on the client's certificate comes with
	// the first read.
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	if err == nil {
		err = errors.New("the master sent Raft data to the client")
	}
	return err
}

// A TLS master running Raft (one master, --peers naming itself) refuses
// what is not a master of its CA on its Raft port: a plain TCP client of
// hashicorp/raft's transport sending AppendEntries at a higher term gets
// no answer, and TLS clients presenting a worker's or an operator's (cli)
// certificate are refused at the handshake. The master logs each refusal
// and stays leader in the same term.
func TestRaftPortRefusesWhatIsNotAMaster(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1})
	m := cl.master("m1")
	before, err := raftFigures(m)
	if err != nil {
		t.Fatal(err)
	}
	if before.State != "Leader" {
		t.Fatalf("m1 before the attacks: %+v", before)
	}
	since := cl.mustStatus().LeaderSince

	// (a) Plain TCP: the attack that deposed a master and committed the
	// attacker's entries before Raft ran over TLS.
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var resp raft.AppendEntriesResponse
	err = plain.AppendEntries("m9", raft.ServerAddress(m.RaftAddr), &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("m9"), Addr: []byte("127.0.0.1:1")},
		Term:      before.Term + 100, LeaderCommitIndex: before.CommitIndex,
	}, &resp)
	plain.Close()
	var ne net.Error
	switch {
	case err == nil:
		t.Errorf("the master answered a plain TCP AppendEntries: %+v", resp)
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("the Raft port kept a plain TCP connection open: %v", err)
	}

	// (b) TLS with a certificate of the cluster's CA that is not a
	// master's.
	if _, err := bin.PKI.WorkerFlags("w1", "127.0.0.1", 0); err != nil {
		t.Fatal(err)
	}
	worker, err := security.Load(security.Files{CA: bin.PKI.CAFile(),
		Cert: filepath.Join(bin.PKI.Dir, "w1.pem"), Key: filepath.Join(bin.PKI.Dir, "w1-key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	operator, err := bin.PKI.Operator()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*security.TLS{"worker": worker, "cli": operator} {
		err := raftHandshake(m.RaftAddr, c.ClientConfig(security.RoleMaster))
		if err == nil || !strings.Contains(err.Error(), "remote error: tls") {
			t.Errorf("a %s certificate on the Raft port: %v, want the handshake refused", name, err)
		}
	}

	// The master logged each refusal, for its reason.
	for _, why := range []string{"does not look like a TLS handshake", "the peer is a worker certificate (w1)", "the peer is a cli certificate (operator)"} {
		re := regexp.MustCompile("refused a Raft connection.*" + regexp.QuoteMeta(why))
		testproc.Eventually(t, 5*time.Second, "m1 logging "+why, func() error {
			if len(m.Proc().LogMatches(re)) == 0 {
				return errors.New("not in its log")
			}
			return nil
		})
	}
	// And it still leads, in the same term, with the same leadership,
	// for longer than an election timeout.
	testproc.Stable(t, 3*time.Second, "m1 after the attacks", func() error {
		f, err := raftFigures(m)
		if err != nil {
			return err
		}
		if f.State != "Leader" || f.Term != before.Term {
			return fmt.Errorf("raft %s in term %d, was Leader in term %d", f.State, f.Term, before.Term)
		}
		st, err := cl.view(m)
		if err != nil {
			return err
		}
		if st.View != wire.ViewLeader || st.Status != wire.MasterAlive || st.LeaderSince == nil || since == nil || !st.LeaderSince.Equal(*since) {
			return fmt.Errorf("view %s %s, leader since %v (was %v)", st.View, st.Status, st.LeaderSince, since)
		}
		return nil
	})
}
