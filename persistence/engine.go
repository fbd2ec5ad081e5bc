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
	// Read runs f on the state as applied on this master, without a copy:
	// f must not keep or change it, and must be quick (writes wait).
	Read(ctx context.Context, f func(*State)) error
	// Close releases the engine.
	Close() error
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

// held is a State kept in memory behind a lock, nil once closed: what
// Memory and Bolt (which keeps its file's state there for Load) share.
type held struct {
	mu    sync.Mutex
	state *State
}

// locked runs f with the lock held, or returns ErrClosed once closed.
func (h *held) locked(f func() error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == nil {
		return ErrClosed
	}
	return f()
}

// Load returns a copy of the state.
func (h *held) Load(context.Context) (s *State, err error) {
	err = h.locked(func() error { s = h.state.Clone(); return nil })
	return s, err
}

// Read runs f on the state under the lock.
func (h *held) Read(_ context.Context, f func(*State)) error {
	return h.locked(func() error { f(h.state); return nil })
}

// close makes every later use answer ErrClosed.
func (h *held) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = nil
}

// Memory keeps the state in memory only (--recovery-mode none): a restarted
// master starts empty, as Spark's NONE recovery mode.
type Memory struct{ held }

// NewMemory returns an empty in-memory engine.
func NewMemory() *Memory { return &Memory{held{state: NewState()}} }

func (m *Memory) Write(_ context.Context, cmds []Command) error {
	return m.locked(func() error { return applyAll(m.state, cmds, nil) })
}

func (m *Memory) Barrier(context.Context) error { return nil }

func (m *Memory) Close() error {
	m.close()
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
