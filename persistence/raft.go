package persistence

import (
	"context"
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
	trans  *raft.NetworkTransport
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

// timeoutOf turns a context deadline into the timeout hashicorp/raft wants.
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 10 * time.Second
}

// Write commits cmds as one log entry and returns once a quorum has it and
// this master applied it.
func (r *Raft) Write(ctx context.Context, cmds []Command) error {
	data, err := Encode(cmds)
	if err != nil {
		return err
	}
	f := r.raft.Apply(data, timeoutOf(ctx))
	if err := f.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrLeadershipLost):
			// hashicorp/raft: the entry may survive into the next term.
			return fmt.Errorf("raft apply: %w: %w", ErrOutcomeUnknown, err)
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrEnqueueTimeout):
			return fmt.Errorf("raft apply: %w: %w", ErrNotLeader, err)
		}
		return fmt.Errorf("raft apply: %w", err)
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return err
	}
	return nil
}

func (r *Raft) Barrier(ctx context.Context) error {
	if err := r.raft.Barrier(timeoutOf(ctx)).Error(); err != nil {
		return fmt.Errorf("raft barrier: %w", err)
	}
	return nil
}

// VerifyLeader confirms with a quorum that this master still leads. It
// fails at once on a master that knows it no longer does, and otherwise
// when ctx ends first.
func (r *Raft) VerifyLeader(ctx context.Context) error {
	f := r.raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("verifying leadership: %w: %w", ErrNotLeader, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("verifying leadership: %w", ctx.Err())
	}
}

// LeaseTimeout is how long a verified leadership stays certain: no other
// master can be elected while a quorum has heard from this one within the
// heartbeat timeout (followers refuse to vote while they know a leader), so
// half of it leaves a wide margin.
func (r *Raft) LeaseTimeout() time.Duration { return raftConfig(r.cfg).HeartbeatTimeout / 2 }

func (r *Raft) Load(context.Context) (*State, error) { return r.fsm.snapshotState(), nil }

// Close stops the node; its data stays for the next start.
func (r *Raft) Close() error {
	err := r.raft.Shutdown().Error()
	r.closeStores()
	return err
}

func (r *Raft) closeStores() {
	if r.trans != nil {
		r.trans.Close()
	}
	if r.store != nil {
		r.store.Close()
	}
}

// LeadershipChanges delivers true when this master becomes the Raft leader
// and false when it stops being one, every change, in order.
func (r *Raft) LeadershipChanges() <-chan bool { return r.notify }

// LeaderID is the id of the current leader, "" when there is none.
//
// A follower that has not heard from its leader for three of the leader's
// heartbeat intervals says there is none: the leader is dead, frozen or
// cut off, and an election is coming. Raft itself believes in the leader
// until its heartbeat timeout (1 to 2 s); naming it meanwhile would send
// clients to a master that cannot answer.
func (r *Raft) LeaderID() string {
	_, id := r.raft.LeaderWithID()
	if id == "" || id == raft.ServerID(r.cfg.ID) {
		return string(id)
	}
	if time.Since(r.raft.LastContact()) > r.silentLeaderAfter() {
		return ""
	}
	return string(id)
}

// silentLeaderAfter is how long without a word from the leader makes a
// follower stop naming it: three heartbeats (the leader sends one every
// tenth of the heartbeat timeout).
func (r *Raft) silentLeaderAfter() time.Duration {
	return 3 * raftConfig(r.cfg).HeartbeatTimeout / 10
}

// IsLeader reports whether this master is the Raft leader.
func (r *Raft) IsLeader() bool { return r.raft.State() == raft.Leader }

// TransferLeadership hands leadership to another voter and waits for it,
// or until ctx ends. hashicorp/raft cannot cancel a transfer: when ctx ends
// first, the transfer goes on in the background and may still complete
// (this master then steps down), or gives up by itself after an election
// timeout.
func (r *Raft) TransferLeadership(ctx context.Context) error {
	if err := await(ctx, r.raft.LeadershipTransfer()); err != nil {
		return fmt.Errorf("transferring leadership: %w", err)
	}
	return nil
}

// await waits for f, or until ctx ends. hashicorp/raft's futures take no
// context (a timeout, where they take one, only bounds the wait to enqueue
// the operation), so one left behind resolves in the background; all do
// eventually, on shutdown at the latest.
func await(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats exposes Raft's counters (term, indexes, state) for status pages.
func (r *Raft) Stats() map[string]string { return r.raft.Stats() }

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

// Addr is the address Raft listens on.
func (r *Raft) Addr() string { return r.cfg.Addr }
