package election

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// RaftNode is what the Raft agent needs from the replicated engine
// (persistence.Raft implements it).
type RaftNode interface {
	// LeadershipChanges delivers every change: true on becoming leader,
	// false on losing it.
	LeadershipChanges() <-chan bool
	LeaderID() string
	IsLeader() bool
	TransferLeadership(ctx context.Context) error
}

// RaftAgent turns Raft's leadership notifications into the candidate's
// ElectedLeader and RevokedLeadership, strictly alternating. hashicorp/raft
// delivers every change on the notify channel, so a flap (leadership lost
// and won back before the master reacted, Nomad PR #6977) arrives as a
// revocation followed by an election, and the master starts over from the
// log. Should two elections ever arrive in a row all the same (an engine
// that coalesces notifications), the candidate is revoked and elected
// again, for the same reason.
type RaftAgent struct {
	node RaftNode
	log  *slog.Logger

	mu       sync.Mutex
	stop     chan struct{}
	stopOnce sync.Once // Stop may be called more than once, or concurrently
	done     chan struct{}
	started  bool
}

// NewRaft returns an agent for node.
func NewRaft(node RaftNode, log *slog.Logger) *RaftAgent {
	return &RaftAgent{node: node, log: log, stop: make(chan struct{}), done: make(chan struct{})}
}

func (a *RaftAgent) Start(c Candidate) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started {
		return
	}
	a.started = true
	go a.run(c)
}

func (a *RaftAgent) run(c Candidate) {
	defer close(a.done)
	leading := false
	changes := a.node.LeadershipChanges()
	for {
		select {
		case <-a.stop:
			if leading {
				c.RevokedLeadership()
			}
			return
		case isLeader := <-changes:
			switch {
			case isLeader && leading:
				a.log.Warn("leadership flapped: lost and won back before the master reacted; starting over")
				c.RevokedLeadership()
				c.ElectedLeader()
			case isLeader:
				leading = true
				c.ElectedLeader()
			case leading:
				leading = false
				c.RevokedLeadership()
			}
		}
	}
}

func (a *RaftAgent) Leader() string { return a.node.LeaderID() }

// transferTimeout bounds the wait for the handover on shutdown, so that a
// master whose followers do not answer still stops.
const transferTimeout = 5 * time.Second

// Stop hands leadership to another master first, if this one leads (a
// graceful handover instead of an election timeout), then stops the
// notifications; the candidate is revoked on the way out.
func (a *RaftAgent) Stop() {
	a.mu.Lock()
	started := a.started
	a.mu.Unlock()
	if a.node.IsLeader() {
		ctx, cancel := context.WithTimeout(context.Background(), transferTimeout)
		if err := a.node.TransferLeadership(ctx); err != nil {
			// On a timeout the transfer may still complete in the
			// background; if it does not, the others elect a leader.
			a.log.Warn("leadership transfer failed or timed out; stopping anyway (the others elect a leader after the election timeout)", "err", err)
		} else {
			a.log.Info("leadership transferred", "to", a.node.LeaderID())
		}
		cancel()
	}
	a.stopOnce.Do(func() { close(a.stop) })
	if started {
		<-a.done
	}
}
