package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/hashicorp/raft"
)

// fsm applies committed log entries to the State, the same way on every
// master. It never panics. A command its entry carries that State.Apply
// refuses is refused the same way everywhere: logged, the rest applied, the
// writer answered with an error. An entry it cannot read at all (malformed,
// or a command type this version does not know and may not skip) is another
// matter: applying the entries after it would drift from the masters that
// can read it, so, as Nomad does, the FSM stops there: it applies nothing
// more and reports the entry once through fatal, and the master exits with
// that error (upgrade it, or mark new commands IgnoreUnknownTypeFlag).
type fsm struct {
	mu      sync.RWMutex
	state   *State
	log     *slog.Logger
	fatal   func(error) // nil: only logged
	stopped error       // the entry it could not read
	// index and term of the last command entry applied to state; 0 after
	// a Restore until the next (the snapshot's, which Raft knows).
	index, term uint64
}

// ErrUnreadableEntry: the FSM met a log entry it cannot read and stopped.
var ErrUnreadableEntry = errors.New("a committed log entry this master cannot read")

func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped != nil {
		return f.stopped
	}
	f.index, f.term = l.Index, l.Term
	cmds, err := Decode(l.Data)
	if err != nil {
		f.stopped = fmt.Errorf("%w (index %d, term %d): %w; stopped applying the log rather than drift from the other masters", ErrUnreadableEntry, l.Index, l.Term, err)
		f.log.Error("stopping: cannot read a committed log entry", "index", l.Index, "err", err)
		if f.fatal != nil {
			f.fatal(f.stopped)
		}
		return f.stopped
	}
	if err := applyAll(f.state, cmds, nil); err != nil {
		f.log.Error("log entry rejected", "index", l.Index, "err", err)
		return err
	}
	return nil
}

// snapshotState copies the state for readers.
func (f *fsm) snapshotState() *State {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.Clone()
}

// Snapshot captures the state; Raft persists it off the apply path. The copy
// is cheap (maps of shared, immutable records).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{state: f.snapshotState()}, nil
}

// Restore replaces the state with a snapshot.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	s, err := decodeSnapshot(rc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.state = s
	f.index, f.term = 0, 0
	f.mu.Unlock()
	return nil
}

type fsmSnapshot struct{ state *State }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.state); err != nil {
		sink.Cancel()
		return fmt.Errorf("writing snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// decodeSnapshot reads a snapshot written by Persist.
func decodeSnapshot(r io.Reader) (*State, error) {
	s := NewState()
	if err := json.NewDecoder(r).Decode(s); err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	// A snapshot of an empty map (or null) decodes as nil; keep them
	// usable.
	s.makeMaps()
	// A snapshot is trusted by everything that reads the state afterwards
	// (a null record would be dereferenced): leftover executor records are
	// dropped, and a snapshot that breaks an invariant otherwise is refused.
	s.Repair()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	return s, nil
}
