package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestHAMembershipJoinLeave pins membership changes: a fourth master
// started with --join and --raft-addr becomes a voter listed in
// ClusterStatus.Masters and replicates the state; POST /v1/raft/leave
// removes it; the cluster keeps working, and as three voters again it
// survives losing its leader while the departed master is down too (with
// four voters, two down would leave no quorum).
func TestHAMembershipJoinLeave(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, nil)
	// Apps are killed at once: an app no client holds would keep a new
	// leader RECOVERING (waiting for its client) for the recovery timeout.
	app1 := mustRegisterAndKill(t, hc.c, "ha-before-join")
	m4, err := hc.Join(4)
	if err != nil {
		t.Fatal(err)
	}

	lst := hc.statusWhen(20*time.Second, "m4 a voter in ClusterStatus.Masters", func(s wire.ClusterStatus) error {
		for _, n := range s.Masters {
			if n.ID == "m4" {
				if !n.Voter || n.RaftAddr != m4.RaftAddr || n.APIAddr != m4.URL {
					return fmt.Errorf("m4 listed as %+v", n)
				}
				return nil
			}
		}
		return fmt.Errorf("masters %+v", s.Masters)
	})
	if len(lst.Masters) != 4 {
		t.Errorf("masters after the join: %+v, want 4", lst.Masters)
	}
	testproc.Eventually(t, 10*time.Second, "m4's replica has the state", func() error {
		s, err := hc.view(m4)
		if err != nil {
			return err
		}
		if s.View != wire.ViewFollower || s.LeaderID != lst.MasterID || !slices.Contains(appIDs(s), app1) {
			return fmt.Errorf("view %s leader %s apps %v", s.View, s.LeaderID, appIDs(s))
		}
		return nil
	})

	leader := hc.master(lst.MasterID)
	membershipRefusals(t, leader.URL)
	r, err := call(http.MethodPost, leader.URL+"/v1/raft/leave", secret, jsonOf(t, wire.LeaveRequest{ID: "m4"}))
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("POST /v1/raft/leave m4: %d %s %v", r.status, r.body, err)
	}
	var nodes []wire.MasterNode
	if err := json.Unmarshal([]byte(r.body), &nodes); err != nil {
		t.Fatalf("leave's answer %s: %v", r.body, err)
	}
	if len(nodes) != 3 || slices.ContainsFunc(nodes, func(n wire.MasterNode) bool { return n.ID == "m4" }) {
		t.Errorf("masters in leave's answer: %+v, want m1..m3", nodes)
	}
	_, lst = hc.leader(10 * time.Second)
	var ids []string
	for _, n := range lst.Masters {
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"m1", "m2", "m3"}) {
		t.Errorf("masters after the leave: %v, want m1 m2 m3", ids)
	}
	mustRegisterAndKill(t, hc.c, "ha-after-leave")
	// Both changes of the Raft configuration are in the audit log, with
	// who asked: m4's certificate joined, the operator removed it.
	if n := auditCount(t, leader.URL, "master:m4", wire.MasterAPI.JoinMaster.Mux(), ""); n != 1 {
		t.Errorf("%d audit entries of m4's join, want 1", n)
	}
	if n := auditCount(t, leader.URL, "secret", wire.MasterAPI.LeaveMaster.Mux(), ""); n != 1 {
		t.Errorf("%d audit entries of m4's leave, want 1", n)
	}

	// Two of four down would be no quorum; two of three up is one.
	m4.Proc().Kill()
	leader = hc.master(lst.MasterID)
	leader.Proc().Kill()
	newLeader, _ := hc.leader(20*time.Second, leader)
	t.Logf("after the leave, with m4 and the leader %s down: %s leads", leader.ID, newLeader.ID)
	mustRegisterAndKill(t, hc.c, "ha-two-of-three")
}

// mustRegisterAndKill is registerAndKill for the test's goroutine.
func mustRegisterAndKill(t *testing.T, c *client.Client, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := registerAndKill(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// membershipRefusals: a master's certificate joins and leaves only as
// itself, a TLS cluster records no http:// API address (clients would be
// sent there with their credentials), and leaving as a master the cluster
// does not list is a 404, not a success.
func membershipRefusals(t *testing.T, leaderURL string) {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(bin.PKI.Dir, "m2.pem"), filepath.Join(bin.PKI.Dir, "m2-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(bin.PKI.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	asM2 := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(c *http.Client, key, path string, body any) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, leaderURL+path, bytes.NewReader(jsonOf(t, body)))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	for _, c := range []struct {
		name   string
		client *http.Client
		key    string
		path   string
		body   any
		status int
		code   wire.ErrorCode
	}{
		{"m2's certificate joining as m1", asM2, "", "/v1/raft/join", wire.JoinRequest{ID: "m1", RaftAddr: "127.0.0.1:1", APIAddr: "https://127.0.0.1:1"}, 403, wire.CodeForbidden},
		{"m2's certificate removing m1", asM2, "", "/v1/raft/leave", wire.LeaveRequest{ID: "m1"}, 403, wire.CodeForbidden},
		{"an http API address in a TLS cluster", asM2, "", "/v1/raft/join", wire.JoinRequest{ID: "m2", RaftAddr: "127.0.0.2:1", APIAddr: "http://127.0.0.99:7077"}, 400, wire.CodeBadRequest},
		{"leaving as a master nobody knows", httpClient, secret, "/v1/raft/leave", wire.LeaveRequest{ID: "nope"}, 404, wire.CodeUnknownMaster},
	} {
		status, body := post(c.client, c.key, c.path, c.body)
		if status != c.status || !strings.Contains(body, string(c.code)) {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, body, c.status, c.code)
		}
	}
}
