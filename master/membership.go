package master

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Raft membership through the API: POST /v1/raft/join adds a master (and
// records its API address, so that any master can point clients at it once
// it leads), POST /v1/raft/leave removes one. Only the leader changes the
// configuration; a follower redirects.

func (m *Master) join(r *http.Request, req wire.JoinRequest) ([]wire.MasterNode, error) {
	if err := selfOnly(r, req.ID); err != nil {
		return nil, err
	}
	if m.cfg.TLS != nil && strings.HasPrefix(req.APIAddr, "http://") {
		// Clients are sent there, their credentials with them.
		return nil, badRequest("apiAddr %q: this cluster speaks TLS; a master's API address must be https://", req.APIAddr)
	}
	return m.membershipChange(r, func(ctx context.Context) error { return m.repl.Join(ctx, req.ID, req.RaftAddr) },
		func(c *core) { c.recordMaster(req.ID, req.APIAddr) })
}

func (m *Master) leave(r *http.Request, req wire.LeaveRequest) ([]wire.MasterNode, error) {
	if err := selfOnly(r, req.ID); err != nil {
		return nil, err
	}
	return m.membershipChange(r, func(ctx context.Context) error {
		if err := m.knownPeer(ctx, req.ID); err != nil {
			return err
		}
		return m.repl.Leave(ctx, req.ID)
	}, func(c *core) { c.forgetMaster(req.ID) })
}

// selfOnly refuses a master's certificate that would make another master
// join or leave (the operator may; a master joins and leaves as itself),
// as a worker's certificate is bound to its worker's id.
func selfOnly(r *http.Request, id string) error {
	if p := httpx.PrincipalOf(r.Context()); p.Kind == httpx.KindMaster && p.Name != id {
		return httpx.Coded(http.StatusForbidden, wire.CodeForbidden, "master %q may join or leave the cluster only as itself, not as %q (the operator may change any)", p.Name, id)
	}
	return nil
}

// membershipChange runs a Raft membership change on the leader, then
// after in the loop, and answers the masters after the change.
func (m *Master) membershipChange(r *http.Request, change func(context.Context) error, after func(c *core)) ([]wire.MasterNode, error) {
	if m.repl == nil {
		return nil, httpx.Coded(http.StatusConflict, wire.CodeNotReplicated, "this master runs alone (--recovery-mode is not raft): there is no cluster to join or leave")
	}
	if _, err := query(r.Context(), m, func(c *core) (wire.None, error) {
		if !c.leading() {
			return wire.None{}, c.notLeader()
		}
		return wire.None{}, nil
	}); err != nil {
		return nil, err
	}
	if err := change(r.Context()); err != nil {
		var se *httpx.StatusError
		if errors.As(err, &se) {
			return nil, err // an answer already (an unknown master)
		}
		return nil, httpx.Coded(http.StatusServiceUnavailable, wire.CodeMembershipFailed, "membership change failed: %v", err)
	}
	m.post(after)
	m.auditSuccess(r.Context()) // a change of Raft's configuration, not of the state
	cs := &wire.ClusterStatus{MasterID: m.cfg.ID, LeaderID: m.cfg.ID}
	m.addMasters(r.Context(), cs)
	return cs.Masters, nil
}

// addMasters fills in the Raft servers, when there are several masters,
// and the masters' versions.
func (m *Master) addMasters(ctx context.Context, cs *wire.ClusterStatus) {
	defer m.withVersions(cs)
	if m.repl == nil {
		return
	}
	servers, err := m.repl.Servers(ctx)
	if err != nil {
		return
	}
	api := map[string]string{}
	for _, n := range cs.Masters {
		api[n.ID] = n.APIAddr
	}
	_ = m.engine.Read(ctx, func(s *persistence.State) {
		for id, rec := range s.Masters {
			api[id] = rec.APIAddr
		}
	})
	cs.Masters = cs.Masters[:0]
	for _, srv := range servers {
		cs.Masters = append(cs.Masters, wire.MasterNode{ID: srv.ID, RaftAddr: srv.RaftAddr, APIAddr: api[srv.ID], Leader: srv.ID == cs.LeaderID, Voter: srv.Voter})
	}
	m.withReachability(cs)
}
