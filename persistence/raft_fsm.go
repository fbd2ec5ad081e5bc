package persistence

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/hashicorp/raft"
)

// fsm applies committed log entries to the State, the same way on every
// master. It never panics: a malformed or unknown entry is logged, leaves
// the state as it was and answers the writer with an error.
type fsm struct {
	mu    sync.RWMutex
	state *State
	log   *slog.Logger
}

func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	cmds, err := Decode(l.Data)
	if err != nil {
		f.log.Error("skipping a log entry this master cannot read", "index", l.Index, "err", err)
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
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
	// A snapshot of an empty map decodes as nil; keep them usable.
	if s.Apps == nil {
		s.Apps = map[string]*AppRecord{}
	}
	if s.Drivers == nil {
		s.Drivers = map[string]*DriverRecord{}
	}
	if s.Workers == nil {
		s.Workers = map[string]*WorkerRecord{}
	}
	if s.Masters == nil {
		s.Masters = map[string]*MasterRecord{}
	}
	if s.Executors == nil {
		s.Executors = map[string]*ExecutorRecord{}
	}
	// A snapshot is trusted by everything that reads the state afterwards
	// (a null record would be dereferenced): leftover executor records are
	// dropped, and a snapshot that breaks an invariant otherwise is refused.
	s.Repair()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	return s, nil
}
