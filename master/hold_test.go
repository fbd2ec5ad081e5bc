package master

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// followerAgent is an election agent that never elects this master and
// names the leader it is told.
type followerAgent struct{ leader atomic.Value }

func (a *followerAgent) Start(election.Candidate) {}
func (a *followerAgent) Stop()                    {}
func (a *followerAgent) Leader() string {
	l, _ := a.leader.Load().(string)
	return l
}

// During an election a follower knows no leader. Rather than answer 503 at
// once (and have every client poll through the election), it holds the
// request until a leader is known, then redirects to it; with none within
// the hold, it answers 503 no_leader.
func TestFollowerHoldsRequestsDuringAnElection(t *testing.T) {
	engine := persistence.NewMemory()
	const leaderURL = "http://127.0.0.2:7077"
	if err := engine.Write(context.Background(), []persistence.Command{persistence.PutMaster(persistence.MasterRecord{ID: "m2", APIAddr: leaderURL})}); err != nil {
		t.Fatal(err)
	}
	agent := &followerAgent{}
	_, base := runMaster(t, Config{}, engine, agent)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func() (int, wire.Error, time.Duration) {
		t.Helper()
		start := time.Now()
		resp, err := noRedirect.Get(base + "/v1/apps/app-1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body wire.Error
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body, time.Since(start)
	}

	// No leader all along: 503 no_leader once the hold is over.
	status, body, took := get()
	if status != http.StatusServiceUnavailable || body.Code != wire.CodeNoLeader || took < leaderHold {
		t.Fatalf("with no leader: %d %q after %v, want 503 no_leader after the %v hold", status, body.Code, took, leaderHold)
	}
	// A leader is elected while the request is held: a redirect to it.
	time.AfterFunc(300*time.Millisecond, func() { agent.leader.Store("m2") })
	status, body, took = get()
	if status != http.StatusTemporaryRedirect || body.Code != wire.CodeNotLeader || body.Leader != leaderURL || took >= leaderHold {
		t.Fatalf("leader elected during the hold: %d %q %q after %v, want a redirect to %s", status, body.Code, body.Leader, took, leaderURL)
	}
}
