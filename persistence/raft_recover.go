package persistence

// Lost quorum: a master whose peers are gone for good (two of three dead
// with their disks) can never again commit anything, since Raft needs a
// majority of the configuration it knows. RecoverRaft rewrites its data
// directory into a cluster of this master alone, with every entry its log
// holds applied (hashicorp/raft's RecoverCluster, what Consul's peers.json
// does); started again, it elects itself, and masters started with --join
// grow the cluster back.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/berth-cluster/berth/internal/logging"
)

// Recovered says what RecoverRaft did.
type Recovered struct {
	// Before is the configuration the data directory held; After, the one
	// it holds now (this master alone).
	Before, After []RaftServer
	// Index and Term of the last log entry applied; State, the state
	// they give (what the master starts with).
	Index, Term uint64
	State       *State
}

// ErrNothingToRecover: the data directory holds no Raft state.
var ErrNothingToRecover = errors.New("no Raft state to recover")

// RecoverRaft turns the Raft data in cfg.Dir (the same directory OpenRaft
// takes) into a one-master cluster: cfg.ID, a voter at cfg.Addr, holding
// every entry of its log applied. The master must not be running (its
// store is locked while it does: RecoverRaft gives up after a second).
//
// It refuses, changing nothing: a directory without Raft state, an id the
// directory's configuration does not list (the wrong directory, or the
// wrong --node-id), and a log holding an entry this build cannot read (the
// recovery would otherwise drop what follows it).
func RecoverRaft(cfg RaftConfig) (Recovered, error) {
	var out Recovered
	if cfg.ID == "" || cfg.Addr == "" || cfg.Dir == "" {
		return out, errors.New("recovering raft needs a node id, an address and a data directory")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Multiplier = max(cfg.Multiplier, 1)
	dbPath := filepath.Join(cfg.Dir, "raft.db")
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		return out, fmt.Errorf("%w: %s does not exist (is --data-dir the surviving master's?)", ErrNothingToRecover, dbPath)
	} else if err != nil {
		return out, fmt.Errorf("recovering raft: %w", err)
	}
	hlog := logging.HCLog(cfg.Logger, "raft")
	store, err := raftboltdb.New(raftboltdb.Options{Path: dbPath, BoltOptions: &bolt.Options{Timeout: time.Second}})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return out, fmt.Errorf("opening %s: another process holds it: stop this master first", dbPath)
		}
		return out, fmt.Errorf("opening raft log: %w", err)
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), 2, hlog)
	if err != nil {
		return out, fmt.Errorf("opening snapshots: %w", err)
	}
	existing, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return out, fmt.Errorf("recovering raft: %w", err)
	}
	if !existing {
		return out, fmt.Errorf("%w in %s", ErrNothingToRecover, cfg.Dir)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.Addr))
	defer trans.Close()

	conf := raftConfig(cfg)
	conf.Logger = hlog
	before, err := raft.GetConfiguration(conf, &fsm{state: NewState(), log: cfg.Logger}, store, store, snaps, trans)
	if err != nil {
		return out, fmt.Errorf("reading the configuration: %w", err)
	}
	out.Before = serversOf(before)
	if !slices.ContainsFunc(before.Servers, func(s raft.Server) bool { return s.ID == raft.ServerID(cfg.ID) }) {
		return out, fmt.Errorf("this data directory's Raft configuration does not list %q (it lists %s): is it the right directory, and the right --node-id?", cfg.ID, describeServers(out.Before))
	}
	if err := readableLog(store); err != nil {
		return out, err
	}

	after := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(cfg.ID), Address: raft.ServerAddress(cfg.Addr)}}}
	f := &fsm{state: NewState(), log: cfg.Logger}
	conf = raftConfig(cfg)
	conf.Logger = hlog
	if err := raft.RecoverCluster(conf, f, store, store, snaps, trans, after); err != nil {
		return out, fmt.Errorf("recovering raft: %w", err)
	}
	if f.stopped != nil {
		// readableLog makes this unreachable; say so loudly if not.
		return out, fmt.Errorf("recovering raft: %w", f.stopped)
	}
	out.After = serversOf(after)
	out.Index, out.Term, out.State = f.index, f.term, f.state
	if list, err := snaps.List(); err == nil && len(list) > 0 {
		out.Index, out.Term = list[0].Index, list[0].Term // the snapshot RecoverCluster wrote
	}
	return out, nil
}

// readableLog checks that this build can read every command entry of the
// log, before RecoverCluster applies them: it applies what it can and
// compacts the log, so an entry skipped would be lost.
func readableLog(store raft.LogStore) error {
	first, err := store.FirstIndex()
	if err != nil {
		return fmt.Errorf("reading the raft log: %w", err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return fmt.Errorf("reading the raft log: %w", err)
	}
	for i := first; i != 0 && i <= last; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			return fmt.Errorf("reading raft log entry %d: %w", i, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if _, err := Decode(l.Data); err != nil {
			return fmt.Errorf("refusing to recover: %w (index %d, term %d): %w; recover with the berth release that wrote it, or a later one", ErrUnreadableEntry, l.Index, l.Term, err)
		}
	}
	return nil
}

func serversOf(c raft.Configuration) []RaftServer {
	var out []RaftServer
	for _, s := range c.Servers {
		out = append(out, RaftServer{ID: string(s.ID), RaftAddr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out
}

func describeServers(ss []RaftServer) string {
	if len(ss) == 0 {
		return "no master"
	}
	var b []byte
	for i, s := range ss {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "%s at %s", s.ID, s.RaftAddr)
	}
	return string(b)
}
