package master

// The operator's routes (berth operator, docs/OPERATIONS.md): the Raft
// membership as each master sees it, and removing a master from it. The
// snapshots are in snapshot.go.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/version"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// operatorRoutes registers the operator's routes.
func (m *Master) operatorRoutes(mux *http.ServeMux) {
	api := wire.MasterAPI
	mux.HandleFunc(api.SnapshotSave.Mux(), m.saveSnapshot)
	mux.HandleFunc(api.SnapshotRestore.Mux(), m.restoreSnapshot)
	serve(m, mux, api.RaftPeers, nil, func(r *http.Request, _ wire.None) (wire.RaftPeers, error) {
		if m.repl == nil {
			return wire.RaftPeers{}, notReplicated()
		}
		return m.raftPeers(r.Context())
	})
	serve(m, mux, api.RemoveRaftPeer, nil, m.removeRaftPeer)
}

// buildVersion is this master's version (internal/version), read once.
var buildVersion = sync.OnceValue(func() string { return version.Get().Version })

func notReplicated() error {
	return httpx.Coded(http.StatusConflict, wire.CodeNotReplicated, "this master runs alone (--recovery-mode is not raft): it has no Raft peers")
}

// raftPeers lists the Raft configuration as this master knows it, each
// other master asked for its figures now (briefly: one that does not
// answer is unreachable).
func (m *Master) raftPeers(ctx context.Context) (wire.RaftPeers, error) {
	servers, err := m.repl.Servers(ctx)
	if err != nil {
		return wire.RaftPeers{}, httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoLeader, "reading the Raft configuration: %v", err)
	}
	api := m.masterAddresses(ctx)
	out := wire.RaftPeers{MasterID: m.cfg.ID, LeaderID: m.agent.Leader(), Peers: make([]wire.RaftPeer, len(servers))}
	client := m.peers.client.get(m.cfg, peerAskTimeout)
	var wg sync.WaitGroup
	for i, srv := range servers {
		p := &out.Peers[i]
		*p = wire.RaftPeer{ID: srv.ID, RaftAddr: srv.RaftAddr, APIAddr: api[srv.ID], Voter: srv.Voter, Leader: srv.ID == out.LeaderID}
		if srv.ID == m.cfg.ID {
			p.Reachable = true
			fillPeer(p, m.raftFigures())
			continue
		}
		if p.APIAddr == "" {
			p.Error = "its API address is not recorded yet"
			continue
		}
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, peerAskTimeout)
			defer cancel()
			f, err := httpx.Call(actx, client, p.APIAddr, wire.MasterAPI.RaftStatus, wire.None{})
			switch {
			case err != nil:
				p.Error = err.Error()
			case f.ID != p.ID:
				p.Error = "master " + f.ID + " answers at its address"
			default:
				p.Reachable = true
				fillPeer(p, f)
				m.peers.sawVersion(p.ID, f.Version)
			}
		})
	}
	wg.Wait()
	return out, nil
}

func fillPeer(p *wire.RaftPeer, f wire.RaftFigures) {
	p.State, p.Term, p.CommitIndex, p.AppliedIndex, p.LastContact, p.Version = f.State, f.Term, f.CommitIndex, f.AppliedIndex, f.LastContact, f.Version
}

// masterAddresses maps each master's id to its API address, as recorded
// in the replicated state.
func (m *Master) masterAddresses(ctx context.Context) map[string]string {
	api := map[string]string{}
	_ = m.engine.Read(ctx, func(s *persistence.State) {
		for id, rec := range s.Masters {
			api[id] = rec.APIAddr
		}
	})
	return api
}

// removeRaftPeer removes a master other than the leader from the Raft
// configuration, on the leader (a follower redirects), and forgets its
// API address. The leader itself is refused: removing it would cost the
// cluster its leader in the middle of the change.
func (m *Master) removeRaftPeer(r *http.Request, _ wire.None) (wire.RaftPeers, error) {
	ctx := r.Context()
	id := r.PathValue("id")
	if err := checkID("master id", id); err != nil {
		return wire.RaftPeers{}, err
	}
	if m.repl == nil {
		return wire.RaftPeers{}, notReplicated()
	}
	if _, err := query(ctx, m, func(c *core) (wire.None, error) {
		if !c.leading() {
			return wire.None{}, c.notLeader()
		}
		return wire.None{}, nil
	}); err != nil {
		return wire.RaftPeers{}, err
	}
	if err := m.knownPeer(ctx, id); err != nil {
		return wire.RaftPeers{}, err
	}
	if id == m.cfg.ID {
		return wire.RaftPeers{}, conflict("master %q is the leader: removing it would leave the cluster without one in the middle of the change; stop it first (SIGTERM hands leadership over), then remove it through the new leader", id)
	}
	if err := m.repl.Leave(ctx, id); err != nil {
		return wire.RaftPeers{}, httpx.Coded(http.StatusServiceUnavailable, wire.CodeMembershipFailed, "membership change failed: %v", err)
	}
	m.log.Warn("removed a master from the Raft configuration", "id", id)
	// Its API address goes too, with the request's audit entry.
	if _, err := call(ctx, m, func(c *core, r reply[wire.None]) {
		c.commit([]persistence.Command{persistence.DeleteMaster(id)}, func() {}, func(err error) { r(wire.None{}, err) })
	}); err != nil {
		m.log.Warn("removed master's address not forgotten", "id", id, "err", err)
	}
	return m.raftPeers(ctx)
}

// Each master's version, for /v1/cluster: a master knows its own; the
// others' it learns by asking them for their Raft figures (the UI's list
// of masters, list-peers, or now and then when /v1/cluster is read), and
// keeps the last each said.

// versionsRefresh is how old the versions known of the other masters may
// be before a read of /v1/cluster asks them again (in the background: the
// read answers with what is known).
const versionsRefresh = 10 * time.Second

func (p *peerFigures) sawVersion(id, v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.versions == nil {
		p.versions = map[string]string{}
	}
	p.versions[id] = v
}

func (p *peerFigures) version(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.versions[id]
}

// withVersions sets each master's version in cs: this one's, and the
// others' as last heard; it asks them again, in the background, when that
// was long ago.
func (m *Master) withVersions(cs *wire.ClusterStatus) {
	cs.Version = buildVersion()
	stale := false
	for i := range cs.Masters {
		n := &cs.Masters[i]
		if n.ID == m.cfg.ID {
			n.Version = cs.Version
			continue
		}
		n.Version = m.peers.version(n.ID)
		stale = stale || n.Version == ""
	}
	now := time.Now()
	m.peers.mu.Lock()
	ask := len(cs.Masters) > 1 && !m.peers.refreshing && (stale || now.Sub(m.peers.refreshed) > versionsRefresh) && now.Sub(m.peers.refreshed) > time.Second
	if ask {
		m.peers.refreshing, m.peers.refreshed = true, now
	}
	m.peers.mu.Unlock()
	if !ask {
		return
	}
	nodes := slices.Clone(cs.Masters)
	go func() {
		defer func() {
			m.peers.mu.Lock()
			m.peers.refreshing = false
			m.peers.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), peerAskTimeout)
		defer cancel()
		m.withRaftFigures(ctx, &wire.ClusterStatus{Masters: nodes})
	}()
}

// knownPeer answers 404 unknown_master unless id is in the Raft
// configuration.
func (m *Master) knownPeer(ctx context.Context, id string) error {
	servers, err := m.repl.Servers(ctx)
	if err != nil {
		return httpx.Coded(http.StatusServiceUnavailable, wire.CodeMembershipFailed, "reading the Raft configuration: %v", err)
	}
	if !slices.ContainsFunc(servers, func(s persistence.RaftServer) bool { return s.ID == id }) {
		ids := make([]string, len(servers))
		for i, s := range servers {
			ids[i] = s.ID
		}
		return httpx.Coded(http.StatusNotFound, wire.CodeUnknownMaster, "no master %q in the Raft configuration (it lists %s)", id, strings.Join(ids, ", "))
	}
	return nil
}
