package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/berth-cluster/berth/internal/logging"
	"github.com/berth-cluster/berth/security"
)

// RaftConfig configures the replicated engine (--recovery-mode raft).
type RaftConfig struct {
	ID   string // this master's Raft server id
	Addr string // host:port Raft listens on; other masters reach it there
	Dir  string // holds raft.db (log and stable store) and snapshots/
	// Peers maps every master's id to its Raft address. A master with no
	// Raft state bootstraps the cluster from it; all may, since they
	// bootstrap the same configuration. Empty: the master joins a running
	// cluster through the API instead.
	Peers map[string]string
	// Multiplier scales Raft's timeouts (Nomad's raft_multiplier): 1 is
	// hashicorp/raft's defaults, a 1 s heartbeat and election timeout, so a
	// dead leader is replaced in about 1-2 s. Slow or busy networks want more.
	Multiplier int
	// Profile picks the timeouts the multiplier scales: "" or "default"
	// (hashicorp/raft's, safe on a slow or WAN-ish network), or "lan"
	// (RaftProfileLAN: a fifth of them, for masters on one LAN). Pre-vote is
	// on in both.
	Profile           string
	SnapshotThreshold uint64        // log entries between snapshots (default 8192)
	TrailingLogs      uint64        // entries kept after a snapshot (default 10240)
	SnapshotInterval  time.Duration // how often to check the threshold (default 120 s)
	// TLS: Raft runs over mutual TLS between master certificates of the
	// cluster's CA (nil: plain TCP, for tests of the engine only).
	TLS    *security.TLS
	Logger *slog.Logger
}

// Raft keeps the state in a Raft log replicated over the masters.
type Raft struct {
	cfg    RaftConfig
	raft   *raft.Raft
	fsm    *fsm
	trans  redialTransport
	store  *raftboltdb.BoltStore
	notify chan bool
	fatal  chan error
}

// Fatal delivers the error that stopped this master's FSM (an entry it
// cannot read, ErrUnreadableEntry): the master must stop.
func (r *Raft) Fatal() <-chan error { return r.fatal }

// notifyBuffer holds leadership changes between Raft and the election
// agent; Raft blocks when it is full, and changes are rare.
const notifyBuffer = 64

// OpenRaft starts this master's Raft node.
func OpenRaft(cfg RaftConfig) (*Raft, error) {
	if cfg.ID == "" || cfg.Addr == "" || cfg.Dir == "" {
		return nil, errors.New("raft needs a node id, an address and a data directory")
	}
	if cfg.Multiplier < 1 {
		cfg.Multiplier = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "snapshots"), 0o700); err != nil {
		return nil, fmt.Errorf("raft data directory: %w", err)
	}
	hlog := logging.HCLog(cfg.Logger, "raft")
	rc := raftConfig(cfg)
	rc.Logger = hlog
	r := &Raft{cfg: cfg, fsm: &fsm{state: NewState(), log: cfg.Logger}, notify: make(chan bool, notifyBuffer), fatal: make(chan error, 1)}
	r.fsm.fatal = func(err error) { r.fatal <- err } // once: the FSM stops after it
	rc.NotifyCh = r.notify

	var err error
	r.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("opening raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), 2, hlog)
	if err != nil {
		r.store.Close()
		return nil, fmt.Errorf("opening snapshots: %w", err)
	}
	advertise, err := net.ResolveTCPAddr("tcp", cfg.Addr)
	if err != nil {
		r.store.Close()
		return nil, fmt.Errorf("raft address %q: %w", cfg.Addr, err)
	}
	r.trans, err = newTransport(cfg, advertise, hlog)
	if err != nil {
		r.store.Close()
		return nil, fmt.Errorf("raft transport on %s: %w", cfg.Addr, err)
	}
	existing, err := raft.HasExistingState(r.store, r.store, snaps)
	if err != nil {
		r.closeStores()
		return nil, err
	}
	r.raft, err = raft.NewRaft(rc, r.fsm, r.store, r.store, snaps, r.trans)
	if err != nil {
		r.closeStores()
		return nil, fmt.Errorf("starting raft: %w", err)
	}
	if !existing && len(cfg.Peers) > 0 {
		if err := r.bootstrap(); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// Raft timing profiles (RaftConfig.Profile).
const (
	RaftProfileDefault = "default"
	// RaftProfileLAN is for masters on one LAN (round trips well under a
	// millisecond, local disks). A follower that hears nothing from the
	// leader for 200-400 ms (HeartbeatTimeout, randomised up to twice)
	// stands for election; the leader sends heartbeats every 20 ms (a tenth
	// of it), so ten in a row must be lost or late, which a LAN does not do
	// short of a dead leader or a machine stalled that long. The leader
	// steps down after 100 ms without a quorum (LeaderLeaseTimeout, half the
	// heartbeat timeout as hashicorp/raft requires it no larger): a deposed
	// leader stops answering before another can be elected. 200 ms stays
	// above a disk's fsync stalls under load (tens of ms; the log is
	// written before an entry counts) and above Go's GC pauses (well under
	// 10 ms) with a margin for a busy machine; pre-vote keeps a master that
	// was cut off from disrupting the others when it returns. On a slower or
	// more loaded network, use the default profile, or scale this one with
	// --raft-multiplier.
	RaftProfileLAN = "lan"
)

// RaftProfiles lists the profiles.
func RaftProfiles() []string { return []string{RaftProfileDefault, RaftProfileLAN} }

// raftConfig takes the profile's timeouts and scales them by the
// multiplier.
func raftConfig(cfg RaftConfig) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.PreVoteDisabled = false
	if cfg.Profile == RaftProfileLAN {
		rc.HeartbeatTimeout = 200 * time.Millisecond
		rc.ElectionTimeout = 200 * time.Millisecond
		rc.LeaderLeaseTimeout = 100 * time.Millisecond
	}
	m := time.Duration(cfg.Multiplier)
	rc.HeartbeatTimeout *= m
	rc.ElectionTimeout *= m
	rc.LeaderLeaseTimeout *= m
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	return rc
}

// bootstrap writes the initial configuration: every peer a voter.
func (r *Raft) bootstrap() error {
	var conf raft.Configuration
	if _, ok := r.cfg.Peers[r.cfg.ID]; !ok {
		return fmt.Errorf("peers do not include this master %q", r.cfg.ID)
	}
	for id, addr := range r.cfg.Peers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(addr), Suffrage: raft.Voter})
	}
	if err := r.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("bootstrapping raft: %w", err)
	}
	return nil
}

// Close stops the node; its data stays for the next start.
func (r *Raft) Close() error {
	err := r.raft.Shutdown().Error()
	r.closeStores()
	return err
}

func (r *Raft) closeStores() {
	if r.trans.NetworkTransport != nil {
		r.trans.Close()
	}
	if r.store != nil {
		r.store.Close()
	}
}

// Stats exposes Raft's counters (term, indexes, state) for status pages.
func (r *Raft) Stats() map[string]string { return r.raft.Stats() }

// Addr is the address Raft listens on.
func (r *Raft) Addr() string { return r.cfg.Addr }
