package master

import (
	"context"
	"net/http"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Raft membership through the API: POST /v1/raft/join adds a master (and
// records its API address, so that any master can point clients at it once
// it leads), POST /v1/raft/leave removes one. Only the leader changes the
// configuration; a follower redirects.

func (m *Master) join(r *http.Request, req wire.JoinRequest) (any, error) {
	return m.membershipChange(r, func(ctx context.Context) error { return m.members.Join(ctx, req.ID, req.RaftAddr) },
		func(c *core) { c.recordMaster(req.ID, req.APIAddr) })
}

func (m *Master) leave(r *http.Request, req wire.LeaveRequest) (any, error) {
	return m.membershipChange(r, func(ctx context.Context) error { return m.members.Leave(ctx, req.ID) },
		func(c *core) { c.forgetMaster(req.ID) })
}

// membershipChange runs a Raft membership change on the leader, then
// after in the loop, and answers the masters after the change.
func (m *Master) membershipChange(r *http.Request, change func(context.Context) error, after func(c *core)) (any, error) {
	if m.members == nil {
		return nil, httpx.Coded(http.StatusConflict, wire.CodeNotReplicated, "this master runs alone (--recovery-mode is not raft): there is no cluster to join or leave")
	}
	if _, err := m.query(r.Context(), func(c *core) (any, error) {
		if !c.leading() {
			return nil, c.notLeader()
		}
		return nil, nil
	}); err != nil {
		return nil, err
	}
	if err := change(r.Context()); err != nil {
		return nil, httpx.Coded(http.StatusServiceUnavailable, wire.CodeMembershipFailed, "membership change failed: %v", err)
	}
	m.post(after)
	cs := &wire.ClusterStatus{MasterID: m.cfg.ID, LeaderID: m.cfg.ID}
	m.addMasters(r.Context(), cs)
	return cs.Masters, nil
}

// addMasters fills in the Raft servers, when there are several masters.
func (m *Master) addMasters(ctx context.Context, cs *wire.ClusterStatus) {
	if m.members == nil {
		return
	}
	servers, err := m.members.Servers(ctx)
	if err != nil {
		return
	}
	api := map[string]string{}
	for _, n := range cs.Masters {
		api[n.ID] = n.APIAddr
	}
	if s, err := m.engine.Load(ctx); err == nil {
		for id, rec := range s.Masters {
			api[id] = rec.APIAddr
		}
	}
	cs.Masters = cs.Masters[:0]
	for _, srv := range servers {
		cs.Masters = append(cs.Masters, wire.MasterNode{ID: srv.ID, RaftAddr: srv.RaftAddr, APIAddr: api[srv.ID], Leader: srv.ID == cs.LeaderID, Voter: srv.Voter})
	}
}
