package master

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// Each master's own Raft figures, for the UI's list of masters: a master
// knows only its own (Raft tells a leader nothing of its followers' last
// contact), so the page's master asks every other one, briefly.

// raftFigures is this master's Raft state, term, indexes and last contact.
func (m *Master) raftFigures() wire.RaftFigures {
	f := wire.RaftFigures{ID: m.cfg.ID}
	r, ok := m.engine.(interface{ Stats() map[string]string })
	if !ok {
		return f
	}
	s := r.Stats()
	num := func(k string) uint64 { n, _ := strconv.ParseUint(s[k], 10, 64); return n }
	f.State, f.Term, f.CommitIndex, f.AppliedIndex, f.LastContact = s["state"], num("term"), num("commit_index"), num("applied_index"), s["last_contact"]
	return f
}

func (m *Master) serveRaftStatus(*http.Request, wire.None) (any, error) { return m.raftFigures(), nil }

// withRaftFigures fills every master's figures into cs.Masters: this one's
// at once, the others' by asking them (up to a second; one that does not
// answer keeps its fields empty).
func (m *Master) withRaftFigures(ctx context.Context, cs *wire.ClusterStatus) {
	if len(cs.Masters) == 0 {
		return
	}
	client := httpx.NewClient(m.cfg.Secret, time.Second)
	if m.cfg.TLS != nil {
		client = httpx.NewClient("", time.Second).WithTLS(m.cfg.TLS.ClientConfig(security.RoleMaster))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range cs.Masters {
		n := &cs.Masters[i]
		if n.ID == m.cfg.ID {
			n.Raft = ptr(m.raftFigures())
			continue
		}
		if n.APIAddr == "" {
			continue
		}
		wg.Go(func() {
			if f, err := httpx.Call(ctx, client, n.APIAddr, wire.MasterAPI.RaftStatus, wire.None{}); err == nil && f.ID == n.ID {
				n.Raft = &f
			}
		})
	}
	wg.Wait()
}

func ptr[T any](v T) *T { return &v }
