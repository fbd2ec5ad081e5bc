package master

import (
	"context"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// A master's API address is written when it leads (prepare) or joins
// through the API; a master of a cluster bootstrapped with --peers that
// never led had none in the state. The others then never asked it (its
// address unknown), did not count it against the quorum, and said "2 of
// 3 masters reachable, a quorum" with it frozen and the leader frozen
// too; berth status listed it without an address. So a follower whose
// record is missing or stale asks the leader to write it, through the
// join route (a master already a voter at its Raft address changes
// nothing in Raft's configuration: persistence.Raft.Join).

// announceEvery bounds how often a follower asks.
const announceEvery = 5 * time.Second

// announceSelf asks the leader to record this master's API address if the
// state lacks it, at most every announceEvery.
func (m *Master) announceSelf(ctx context.Context, servers []persistence.RaftServer, api map[string]string) {
	if api[m.cfg.ID] == m.cfg.Advertise || m.cfg.Advertise == "" || time.Since(m.peers.announced) < announceEvery {
		return
	}
	leader := m.leaderAddress()
	if leader == "" {
		return // no leader (or this master leads, and prepare wrote it)
	}
	req := wire.JoinRequest{ID: m.cfg.ID, APIAddr: m.cfg.Advertise}
	for _, s := range servers {
		if s.ID == m.cfg.ID && s.Voter {
			req.RaftAddr = s.RaftAddr
		}
	}
	if req.RaftAddr == "" {
		return // not a voter: its join is the operator's (or in flight)
	}
	m.peers.announced = time.Now()
	actx, cancel := context.WithTimeout(ctx, peerAskTimeout)
	defer cancel()
	if _, err := httpx.Call(actx, m.peers.client.get(m.cfg, peerAskTimeout), leader, wire.MasterAPI.JoinMaster, req); err != nil {
		m.log.Warn("could not have the leader record this master's API address", "leader", leader, "err", err)
		return
	}
	m.log.Info("the leader recorded this master's API address", "leader", leader, "api", m.cfg.Advertise)
}
