package persistence

// Membership: the masters in the Raft configuration, and how one joins or
// leaves it (run on the leader, for the API's membership routes).

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"
)

// RaftServer is one master in the Raft configuration.
type RaftServer struct {
	ID, RaftAddr string
	Voter        bool
}

// Join adds a master as a voter (on the leader). A master that is already
// a voter with this id at this address changes nothing, so joining is safe
// to repeat. Any other server with this id or at this address is removed
// first, as hraftd does: a master that came back at a new address, or a new
// master at a departed master's address, would otherwise leave a server in
// the configuration that nobody answers for, counting against the quorum.
// Each step waits for its commit, or until ctx ends.
func (r *Raft) Join(ctx context.Context, id, raftAddr string) error {
	member, stale, err := r.joinPlan(id, raftAddr)
	if err != nil {
		return err
	}
	for _, s := range stale {
		r.cfg.Logger.Info("removing a stale raft server before adding its replacement",
			"stale_id", s.ID, "stale_addr", s.Address, "id", id, "addr", raftAddr)
		if err := await(ctx, r.raft.RemoveServer(s.ID, 0, timeoutOf(ctx))); err != nil {
			return fmt.Errorf("adding %s at %s: removing %s at %s first: %w", id, raftAddr, s.ID, s.Address, err)
		}
	}
	if member {
		return nil
	}
	if err := await(ctx, r.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, timeoutOf(ctx))); err != nil {
		return fmt.Errorf("adding %s at %s: %w", id, raftAddr, err)
	}
	return nil
}

// joinPlan reads the configuration for Join: whether id is already a voter
// at raftAddr, and the servers to remove before it can be (those with this
// id or at this address, but not both). It refuses to remove this
// master, the leader that runs Join: a request that would is a
// misconfiguration (two masters with one id, or at one address), and
// removing itself would only cost the cluster its leader.
func (r *Raft) joinPlan(id, raftAddr string) (member bool, stale []raft.Server, err error) {
	f := r.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return false, nil, fmt.Errorf("adding %s at %s: reading the configuration: %w", id, raftAddr, err)
	}
	for _, s := range f.Configuration().Servers {
		sameID, sameAddr := s.ID == raft.ServerID(id), s.Address == raft.ServerAddress(raftAddr)
		switch {
		case sameID && sameAddr:
			member = s.Suffrage == raft.Voter // AddVoter promotes a nonvoter in place
		case sameID || sameAddr:
			if s.ID == raft.ServerID(r.cfg.ID) {
				return false, nil, fmt.Errorf("adding %s at %s: refusing to remove this master (%s at %s) to make room", id, raftAddr, s.ID, s.Address)
			}
			stale = append(stale, s)
		}
	}
	return member, stale, nil
}

// Leave removes a master from the configuration (on the leader).
func (r *Raft) Leave(ctx context.Context, id string) error {
	if err := await(ctx, r.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx))); err != nil {
		return fmt.Errorf("removing %s: %w", id, err)
	}
	return nil
}

// Servers lists the current configuration.
func (r *Raft) Servers(context.Context) ([]RaftServer, error) {
	f := r.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []RaftServer
	for _, s := range f.Configuration().Servers {
		out = append(out, RaftServer{ID: string(s.ID), RaftAddr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}
