package master

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// The UI's list of masters asks each other master for its Raft figures; a
// master that does not answer is left alone for a while, so that pages
// refreshed during a failover do not wait for it each time, while one that
// answers is asked every time.
func TestRaftFiguresLeaveASilentMasterAlone(t *testing.T) {
	var answered, silent atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered.Add(1)
		json.NewEncoder(w).Encode(wire.RaftFigures{ID: "m2", State: "Follower", Term: 3})
	}))
	t.Cleanup(up.Close)
	release := make(chan struct{})
	frozen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		silent.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(frozen.Close)
	t.Cleanup(func() { close(release) })

	m := &Master{cfg: Config{ID: "m1"}}
	page := func() wire.ClusterStatus {
		cs := wire.ClusterStatus{Masters: []wire.MasterNode{{ID: "m1"}, {ID: "m2", APIAddr: up.URL}, {ID: "m3", APIAddr: frozen.URL}}}
		m.withRaftFigures(context.Background(), &cs)
		return cs
	}
	cs := page()
	if f := cs.Masters[1].Raft; f == nil || f.Term != 3 {
		t.Errorf("the answering master's figures: %+v", f)
	}
	if cs.Masters[0].Raft == nil || cs.Masters[0].Raft.ID != "m1" || cs.Masters[2].Raft != nil {
		t.Errorf("own figures %+v, the silent master's %+v", cs.Masters[0].Raft, cs.Masters[2].Raft)
	}
	page()
	if answered.Load() != 2 || silent.Load() != 1 {
		t.Errorf("after two pages: the answering master asked %d times (want 2), the silent one %d (want 1)", answered.Load(), silent.Load())
	}
}
