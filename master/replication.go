package master

import (
	"context"
	"time"

	"github.com/berth-cluster/berth/persistence"
)

// Replication is what a replicated engine (Raft) adds to the master, in
// one place: the check that this master still leads, the lease that check
// buys, its figures, and the set of masters. The master is given it once
// (New); a master that runs alone has none, and then leads for as long as
// it runs, has no figures and no membership to change.
type Replication interface {
	// VerifyLeader returns nil only if this master still leads, proven
	// by a quorum answering after the call began.
	VerifyLeader(ctx context.Context) error
	// LeaseTimeout is how long after a VerifyLeader no other master can
	// have been elected (half Raft's heartbeat timeout).
	LeaseTimeout() time.Duration
	// Stats are the engine's figures: state, term, commit and applied
	// index, last contact.
	Stats() map[string]string
	// LoadApplied is the engine's Load with the index and term of the last
	// log entry the copy includes (an operator's snapshot, snapshot.go).
	LoadApplied(ctx context.Context) (*persistence.State, uint64, uint64, error)
	// DiskFull reports whether this master's data directory is out of
	// space; TransferLeadership hands leadership to another voter. A
	// master elected with a full disk gives way at once (prepare): it
	// could store no entry, and its log being as long as the others' it
	// would otherwise win election after election.
	DiskFull() bool
	TransferLeadership(ctx context.Context) error
	Membership
}

// Membership is what a replicated engine offers for managing the set of
// masters (join and leave through the API).
type Membership interface {
	Join(ctx context.Context, id, raftAddr string) error
	Leave(ctx context.Context, id string) error
	Servers(ctx context.Context) ([]persistence.RaftServer, error)
}

// leaderAddress is the API address of the current leader, "" if none is
// known or it is this master: read from its one record, not a copy of the
// whole state.
func (m *Master) leaderAddress() string {
	id := m.agent.Leader()
	if id == "" || id == m.cfg.ID {
		return ""
	}
	addr := ""
	_ = m.engine.Read(context.Background(), func(s *persistence.State) {
		if r := s.Masters[id]; r != nil {
			addr = r.APIAddr
		}
	})
	return addr
}
