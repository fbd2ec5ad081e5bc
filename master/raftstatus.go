package master

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Each master's own Raft figures, for the UI's list of masters: a master
// knows only its own (Raft tells a leader nothing of its followers' last
// contact), so the page's master asks every other one, briefly.

// raftFigures is this master's Raft state, term, indexes and last contact.
func (m *Master) raftFigures() wire.RaftFigures {
	f := wire.RaftFigures{ID: m.cfg.ID, Version: buildVersion()}
	if m.repl == nil {
		return f
	}
	s := m.repl.Stats()
	num := func(k string) uint64 { n, _ := strconv.ParseUint(s[k], 10, 64); return n }
	f.State, f.Term, f.CommitIndex, f.AppliedIndex, f.LastContact = s["state"], num("term"), num("commit_index"), num("applied_index"), s["last_contact"]
	return f
}

func (m *Master) serveRaftStatus(*http.Request, wire.None) (wire.RaftFigures, error) {
	return m.raftFigures(), nil
}

// withRaftFigures fills every master's figures into cs.Masters: this one's
// at once, the others' by asking them (briefly; one that does not answer
// keeps its fields empty, and is not asked again for a while).
func (m *Master) withRaftFigures(ctx context.Context, cs *wire.ClusterStatus) {
	if len(cs.Masters) == 0 {
		return
	}
	client := m.peers.client.get(m.cfg, peerAskTimeout)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, peerAskTimeout)
	defer cancel()
	now := time.Now()
	var wg sync.WaitGroup
	for i := range cs.Masters {
		n := &cs.Masters[i]
		if n.ID == m.cfg.ID {
			n.Raft = ptr(m.raftFigures())
			continue
		}
		if n.APIAddr == "" || m.peers.resting(n.ID, now) {
			continue
		}
		wg.Go(func() {
			f, err := httpx.Call(ctx, client, n.APIAddr, wire.MasterAPI.RaftStatus, wire.None{})
			ok := err == nil && f.ID == n.ID // another id: not the master listed there
			if ok {
				n.Raft = &f
				m.peers.sawVersion(n.ID, f.Version)
			}
			if ok || parent.Err() == nil { // a page that went away says nothing of the master
				m.peers.answered(n.ID, ok, now)
			}
		})
	}
	wg.Wait()
}

// How long a page waits for another master's figures, and how long a
// master that did not answer is left alone: the UI refreshes every 2 s, and
// while a master is down (a failover) each refresh would otherwise wait for
// it.
const (
	peerAskTimeout = 500 * time.Millisecond
	peerRest       = 5 * time.Second
)

// peerFigures is what asking the other masters keeps: one client (its
// connections are reused from page to page) and the masters that did not
// answer lately. Its zero value is ready.
type peerFigures struct {
	client peerClient
	mu     sync.Mutex
	rest   map[string]time.Time // master id → not asked before then
	// versions: each master's version as it last said (operator.go);
	// refreshed: when they were last asked, refreshing: they are being.
	versions   map[string]string
	refreshed  time.Time
	refreshing bool
}

func (p *peerFigures) resting(id string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return now.Before(p.rest[id])
}

func (p *peerFigures) answered(id string, ok bool, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ok {
		delete(p.rest, id)
		return
	}
	if p.rest == nil {
		p.rest = map[string]time.Time{}
	}
	p.rest[id] = now.Add(peerRest)
}

func ptr[T any](v T) *T { return &v }
