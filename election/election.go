// Package election decides which master leads (Spark's
// LeaderElectionAgent). An Agent tells its Candidate when it becomes the
// leader and when it stops being one; the master acts only in between.
package election

import "sync"

// Candidate is told about leadership changes (Spark's LeaderElectable).
// Calls alternate: ElectedLeader, RevokedLeadership, ElectedLeader, ...
// and never overlap. They must not block for long: the master turns each
// into an event for its loop.
type Candidate interface {
	ElectedLeader()
	RevokedLeadership()
}

// Agent runs an election on behalf of one master.
type Agent interface {
	// Start begins delivering leadership changes to c.
	Start(c Candidate)
	// Leader returns the id of the current leader as far as this master
	// knows, or "" when there is none.
	Leader() string
	// Stop ends the agent; no call reaches the candidate after it returns.
	Stop()
}

// Single is the agent of a master that runs alone (Spark's
// MonarchyLeaderAgent): it is the leader as soon as it starts.
type Single struct {
	id string
	mu sync.Mutex
	c  Candidate
}

// NewSingle returns the agent of the lone master id.
func NewSingle(id string) *Single { return &Single{id: id} }

func (s *Single) Start(c Candidate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c = c
	c.ElectedLeader()
}

func (s *Single) Leader() string { return s.id }

// Stop revokes the leadership, so that a master shutting down stops acting
// (expiring workers, sending commands) before its API drains.
func (s *Single) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		s.c.RevokedLeadership()
		s.c = nil
	}
}
