// Package membership makes a Raft cluster of masters know this master.
//
// A master's API address lives in the replicated state, written by the
// leader when it adds the master (POST /v1/raft/join), so that any master
// can send clients to it once it leads. Announce asks for that until the
// state holds this master at its current address: a master started with
// --join asks the masters listed there until it is a member, and every
// master, --peers ones included, asks the leader when its address is
// missing or changed (for a member, joining again only rewrites the record).
package membership

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Cluster is this master's view of the replicated state
// (persistence.Raft implements it).
type Cluster interface {
	Load(ctx context.Context) (*persistence.State, error)
	// LeaderID is the id of the current leader, "" when there is none.
	LeaderID() string
}

// Config says who this master is and whom to ask.
type Config struct {
	// Self is this master as the cluster must know it: its id, Raft
	// address and API URL.
	Self wire.JoinRequest
	// Join lists API URLs of masters of the cluster (--join): asked until
	// this master knows a leader other than itself, with a recorded API
	// address. Empty: wait for a leader.
	Join   []string
	Secret string
	// TLS is how to call the other masters (nil without TLS).
	TLS *tls.Config
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Pace waits between attempts; nil waits in real time (RealPace).
	Pace Pace
}

// Announce asks the cluster to add this master until the replicated state
// holds it at its API address, and returns nil then, or an error wrapping
// ctx's when ctx ends first.
func Announce(ctx context.Context, cluster Cluster, cfg Config) error {
	a := announcer{cluster: cluster, cfg: cfg, log: cfg.Logger, pace: cfg.Pace}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.log = a.log.With("id", cfg.Self.ID, "api", cfg.Self.APIAddr, "raft", cfg.Self.RaftAddr)
	if a.pace == nil {
		a.pace = RealPace
	}
	for pause := firstPause; ; pause = min(2*pause, maxPause) {
		if err := ctx.Err(); err != nil {
			return a.stopped(err)
		}
		if a.attempt(ctx) {
			a.log.Info("cluster knows this master")
			return nil
		}
		if err := a.pace(ctx, pause); err != nil {
			return a.stopped(err)
		}
	}
}

// attemptBudget bounds one attempt, following redirects to the leader
// and riding out a short election; Announce's own pause does the rest.
const attemptBudget = 2 * time.Second

type announcer struct {
	cluster Cluster
	cfg     Config
	log     *slog.Logger
	pace    Pace
}

func (a *announcer) stopped(err error) error {
	a.log.Debug("stopped announcing this master", "err", err)
	return fmt.Errorf("announcing master %s: %w", a.cfg.Self.ID, err)
}

// attempt reports whether the replicated state holds this master at its
// API address, and when it does not, asks a master to add it (the state
// tells on the next attempt whether that worked).
func (a *announcer) attempt(ctx context.Context) (known bool) {
	s, err := a.cluster.Load(ctx)
	if err != nil {
		a.log.Debug("reading the replicated state failed; retrying", "err", err)
		return false
	}
	if r := s.Masters[a.cfg.Self.ID]; r != nil && r.APIAddr == a.cfg.Self.APIAddr {
		return true
	}
	targets := a.targets(s)
	if len(targets) == 0 {
		a.log.Debug("no master to ask yet: waiting for a leader")
		return false
	}
	c, err := client.New(targets, a.cfg.Secret, client.WithRetryBudget(attemptBudget), client.WithTLS(a.cfg.TLS))
	if err != nil {
		a.log.Warn("cannot ask these masters to add this master; retrying", "masters", targets, "err", err)
		return false
	}
	a.log.Debug("asking the cluster to add this master", "masters", targets)
	if _, err := c.JoinMaster(ctx, a.cfg.Self); err != nil {
		a.log.Debug("announcing this master failed; retrying", "masters", targets, "err", err)
		return false
	}
	a.log.Info("the leader added this master; waiting for the replicated state to hold it", "masters", targets)
	return false
}

// targets are the masters to ask: the leader, when this master knows one
// other than itself and its API address; else the --join masters.
func (a *announcer) targets(s *persistence.State) []string {
	if id := a.cluster.LeaderID(); id != "" && id != a.cfg.Self.ID {
		if r := s.Masters[id]; r != nil {
			return []string{r.APIAddr}
		}
	}
	return a.cfg.Join
}
