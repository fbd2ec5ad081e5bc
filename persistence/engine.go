package persistence

import (
	"context"
	"errors"
	"sync"
)

// Engine keeps the durable state. The master writes through it and reads it
// back when it becomes the leader.
type Engine interface {
	// Write applies cmds in order, each on its own (a command that cannot
	// apply is skipped and reported; it never takes the others with it),
	// and returns once they are durable: on disk for one master, committed
	// on a quorum for Raft. The master acknowledges a request only after
	// Write returned nil.
	Write(ctx context.Context, cmds []Command) error
	// Barrier returns once every write committed before it has been applied
	// to this master's state. A new Raft leader calls it before reading the
	// state; for a single master it returns at once.
	Barrier(ctx context.Context) error
	// Load returns a copy of the state as applied on this master.
	Load(ctx context.Context) (*State, error)
	// Close releases the engine.
	Close() error
}

// LeaderVerifier is implemented by replicated engines: VerifyLeader returns
// nil only if this master still leads, proven by a quorum answering after
// the call began (hashicorp/raft's VerifyLeader). An engine without it has
// one master, which leads for as long as it runs.
type LeaderVerifier interface {
	VerifyLeader(ctx context.Context) error
}

// ErrNotLeader wraps a replicated write refused because this master does
// not lead: it was certainly not committed.
var ErrNotLeader = errors.New("not the leader")

// ErrOutcomeUnknown wraps a write whose leader lost leadership before it
// learned the outcome: the entry may still be committed by the next leader,
// so retrying a creation could create it twice.
var ErrOutcomeUnknown = errors.New("outcome unknown: leadership was lost before the write was confirmed")

// ErrClosed is returned by an engine used after Close.
var ErrClosed = errors.New("persistence engine closed")

// Memory keeps the state in memory only (--recovery-mode none): a restarted
// master starts empty, as Spark's NONE recovery mode.
type Memory struct {
	mu     sync.Mutex
	state  *State
	closed bool
}

// NewMemory returns an empty in-memory engine.
func NewMemory() *Memory { return &Memory{state: NewState()} }

func (m *Memory) Write(ctx context.Context, cmds []Command) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return applyAll(m.state, cmds, nil)
}

func (m *Memory) Barrier(context.Context) error { return nil }

func (m *Memory) Load(context.Context) (*State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	return m.state.Clone(), nil
}

func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// applyAll applies cmds in order, each on its own: one that fails (a
// malformed command, which Apply leaves without effect) is skipped, so it
// cannot take unrelated changes batched with it down too. Deterministic, so
// every master that replays the same entry ends in the same state.
func applyAll(s *State, cmds []Command, touched func(Key)) error {
	var errs []error
	for _, c := range cmds {
		if err := s.Apply(c, touched); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
