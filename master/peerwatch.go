package master

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Which masters answer. Raft tells a master nothing of the others'
// health (a follower does not even hear from other followers), so every
// master asks each other one for its Raft figures every
// peerProbeInterval, and /v1/cluster says of each whether it answered,
// since when it has not, and when it last did: `berth status` shows a
// master killed with SIGKILL as unreachable within about a second,
// rather than in its last Raft role, and a follower without a quorum
// can say how many masters it cannot reach.

// peerProbeInterval is how often a master asks each other master.
const peerProbeInterval = time.Second

// peerSeen is what the asks found of one master.
type peerSeen struct {
	lastSeen  time.Time // its last answer; zero: none since this master started
	downSince time.Time // the first ask it failed since its last answer; zero while it answers
	err       string    // what that ask got
}

// peerWatch is the asks' findings, by master id. Its zero value is ready.
type peerWatch struct {
	mu   sync.Mutex
	seen map[string]*peerSeen
	// lost is set while fewer voters answer than a quorum (noQuorum).
	lost *noQuorum
}

// noQuorum is a round of asks that reached fewer voters than a quorum.
type noQuorum struct {
	reached, voters int
	since           time.Time
}

func (q *noQuorum) error() error {
	return httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoQuorum,
		"no quorum: this master reaches %d of %d masters (since %s), fewer than the %d a leader needs; no leader can be elected and writes are refused until enough are back (reads still work; docs/HA.md: losing a quorum)",
		q.reached, q.voters, q.since.Format(time.RFC3339), q.voters/2+1)
}

// quorumLost is the last round's verdict: nil while a quorum answers (or
// before a round has run).
func (p *peerWatch) quorumLost() *noQuorum {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// judgeQuorum sets the verdict of a round of asks of the voters (ids, this
// master's included) at now. A voter never asked (its API address not
// known yet) is not counted against the quorum: only a failed ask says a
// master is gone.
func (p *peerWatch) judgeQuorum(self string, voters []string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	reached := 0
	for _, id := range voters {
		if s := p.seen[id]; id == self || s == nil || s.downSince.IsZero() {
			reached++
		}
	}
	switch {
	case len(voters) == 0 || reached >= len(voters)/2+1:
		p.lost = nil
	case p.lost == nil:
		p.lost = &noQuorum{reached: reached, voters: len(voters), since: now}
	default:
		p.lost.reached, p.lost.voters = reached, len(voters)
	}
}

func (p *peerWatch) record(id string, err error, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]*peerSeen{}
	}
	s := p.seen[id]
	if s == nil {
		s = &peerSeen{}
		p.seen[id] = s
	}
	if err == nil {
		s.lastSeen, s.downSince, s.err = at, time.Time{}, ""
		return
	}
	if s.downSince.IsZero() {
		s.downSince = at
	}
	s.err = err.Error()
}

func (p *peerWatch) get(id string) (peerSeen, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.seen[id]
	if !ok {
		return peerSeen{}, false
	}
	return *s, true
}

// watchPeers asks the other masters every peerProbeInterval until ctx
// ends (nothing to ask without Raft).
func (m *Master) watchPeers(ctx context.Context) {
	if m.repl == nil {
		return
	}
	t := time.NewTicker(peerProbeInterval)
	defer t.Stop()
	for {
		m.probePeers(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probePeers asks every other master of the Raft configuration, at once,
// for its figures, each within peerAskTimeout.
func (m *Master) probePeers(ctx context.Context) {
	servers, err := m.repl.Servers(ctx)
	if err != nil {
		return
	}
	api := m.masterAddresses(ctx)
	client := m.peers.client.get(m.cfg, peerAskTimeout)
	var wg sync.WaitGroup
	var voters []string
	for _, srv := range servers {
		if srv.Voter {
			voters = append(voters, srv.ID)
		}
		id, addr := srv.ID, api[srv.ID]
		if id == m.cfg.ID || addr == "" {
			continue
		}
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, peerAskTimeout)
			defer cancel()
			at := time.Now()
			f, err := httpx.Call(actx, client, addr, wire.MasterAPI.RaftStatus, wire.None{})
			if ctx.Err() != nil {
				return // stopping: that says nothing of the master
			}
			if err == nil && f.ID != id {
				err = errAnswersAs(f.ID)
			}
			if err == nil {
				m.peers.sawVersion(id, f.Version)
			}
			m.watch.record(id, err, at)
		})
	}
	wg.Wait()
	if ctx.Err() == nil {
		m.watch.judgeQuorum(m.cfg.ID, voters, time.Now())
	}
}

type errAnswersAs string

func (e errAnswersAs) Error() string { return "master " + string(e) + " answers at its address" }

// withReachability says of each master in cs whether it answered this
// one's last ask, sorts them by id, and, in a follower's view, when this
// master last heard from a leader.
func (m *Master) withReachability(cs *wire.ClusterStatus) {
	for i := range cs.Masters {
		n := &cs.Masters[i]
		if n.ID == m.cfg.ID {
			n.Reachable = ptr(true)
			continue
		}
		s, ok := m.watch.get(n.ID)
		if !ok || (s.lastSeen.IsZero() && s.downSince.IsZero()) {
			continue // not asked yet
		}
		n.Reachable = ptr(s.downSince.IsZero())
		if !s.lastSeen.IsZero() {
			n.LastSeen = ptr(s.lastSeen)
		}
		if !s.downSince.IsZero() {
			n.UnreachableSince, n.Unreachable = ptr(s.downSince), s.err
			n.Leader = false // what it was is no news of what it is
		}
	}
	slices.SortFunc(cs.Masters, func(a, b wire.MasterNode) int { return cmp.Compare(a.ID, b.ID) })
	if cs.View == wire.ViewFollower && m.repl != nil {
		if d, err := time.ParseDuration(m.repl.Stats()["last_contact"]); err == nil {
			cs.LeaderContact = ptr(time.Now().Add(-d))
		}
	}
}
