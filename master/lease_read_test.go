package master

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// A read answered as the leader's passes only if the lease still holds once
// it is answered: a master paused between its confirmation and its answer
// refuses it (503 no_leader) instead of answering from a stale state.
func TestReadsNeedTheLeaseAtTheirAnswer(t *testing.T) {
	m := &Master{lease: &leaderLease{verify: func(context.Context) error { return nil }, duration: time.Second},
		agent: election.NewSingle("m1"), engine: persistence.NewMemory(), cfg: Config{ID: "m1"}}
	m.lease.leading.Store(true)
	m.lease.until = time.Now().Add(time.Second)
	if v, err := stillLeading(m, "answer", nil); err != nil || v != "answer" {
		t.Errorf("within the lease: %v %v", v, err)
	}
	m.lease.until = time.Now().Add(-time.Millisecond) // the lease ran out while the loop answered
	v, err := stillLeading(m, "stale answer", nil)
	if se := statusErrorOf(err); v != "" || se.Status != http.StatusServiceUnavailable || se.Code != wire.CodeNoLeader {
		t.Errorf("after the lease: %v %v, want 503 no_leader", v, err)
	}
	m.lease.leading.Store(false) // not leading: the loop's answer is a redirect or "no leader" already
	if v, err := stillLeading(m, "x", nil); v != "x" || err != nil {
		t.Errorf("not leading: %v %v", v, err)
	}
}
