package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/berth-cluster/berth/wire"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type raftCluster struct {
	t     *testing.T
	peers map[string]string
	dirs  map[string]string
	nodes map[string]*Raft
	tune  func(*RaftConfig)
}

func newRaftCluster(t *testing.T, n int, tune func(*RaftConfig)) *raftCluster {
	c := &raftCluster{t: t, peers: map[string]string{}, dirs: map[string]string{}, nodes: map[string]*Raft{}, tune: tune}
	for i := 1; i <= n; i++ {
		id := "m" + strconv.Itoa(i)
		c.peers[id] = freeAddr(t)
		c.dirs[id] = t.TempDir()
	}
	for id := range c.peers {
		c.start(id)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.Close()
		}
	})
	return c
}

func (c *raftCluster) start(id string) {
	c.t.Helper()
	cfg := RaftConfig{ID: id, Addr: c.peers[id], Dir: c.dirs[id], Peers: c.peers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if c.tune != nil {
		c.tune(&cfg)
	}
	r, err := OpenRaft(cfg)
	if err != nil {
		c.t.Fatalf("starting %s: %v", id, err)
	}
	c.nodes[id] = r
}

func (c *raftCluster) stop(id string) {
	c.nodes[id].Close()
	delete(c.nodes, id)
}

// leader waits for a leader and returns it.
func (c *raftCluster) leader() *Raft {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range c.nodes {
			if n.IsLeader() {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no leader within 10 s")
	return nil
}

// converged waits until every running node's state equals want.
func (c *raftCluster) converged(want func(*State) bool) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, n := range c.nodes {
			s, _ := n.Load(context.Background())
			ok = ok && want(s)
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("nodes did not converge within 10 s")
}

func TestRaftReplicatesWritesAndRefusesFollowers(t *testing.T) {
	c := newRaftCluster(t, 3, nil)
	ctx := context.Background()
	leader := c.leader()
	if err := leader.Write(ctx, []Command{BumpEpoch(), PutApp(app("app-20261122100000-0001"), 0)}); err != nil {
		t.Fatal(err)
	}
	c.converged(func(s *State) bool { return s.Epoch == 1 && s.Apps["app-20261122100000-0001"] != nil })
	for id, n := range c.nodes {
		if n == leader {
			continue
		}
		if err := n.Write(ctx, []Command{BumpEpoch()}); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("follower %s: write answered %v, want ErrNotLeader", id, err)
		}
		if n.LeaderID() == "" {
			t.Errorf("follower %s does not know the leader", id)
		}
	}
	// The FSM answers a malformed entry with an error and no change.
	if err := leader.Write(ctx, []Command{{Type: TypePutApp}}); err == nil {
		t.Fatal("malformed command committed without an error")
	}
	c.converged(func(s *State) bool { return s.Epoch == 1 && len(s.Apps) == 1 })
}

func TestRaftStateSurvivesRestartOfAll(t *testing.T) {
	c := newRaftCluster(t, 3, nil)
	ctx := context.Background()
	if err := c.leader().Write(ctx, []Command{BumpEpoch(), PutWorker(WorkerRecord{ID: "w1", Cores: 4})}); err != nil {
		t.Fatal(err)
	}
	c.converged(func(s *State) bool { return s.Workers["w1"] != nil })
	for id := range c.peers {
		c.stop(id)
	}
	for id := range c.peers {
		c.start(id) // existing state: no second bootstrap
	}
	// Committed entries are applied again once a leader is back.
	if err := c.leader().Write(ctx, []Command{BumpEpoch()}); err != nil {
		t.Fatal(err)
	}
	c.converged(func(s *State) bool { return s.Epoch == 2 && s.Workers["w1"] != nil })
}

// A follower that loses its disk catches up from the leader's snapshot: the
// log it would need was compacted away.
func TestRaftFollowerFromScratchCatchesUpFromSnapshot(t *testing.T) {
	c := newRaftCluster(t, 3, func(cfg *RaftConfig) {
		cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = 32, 8, 100*time.Millisecond
	})
	ctx := context.Background()
	leader := c.leader()
	var follower string
	for id, n := range c.nodes {
		if n != leader {
			follower = id
		}
	}
	c.stop(follower)
	os.RemoveAll(c.dirs[follower])
	const writes = 300
	for i := 0; i < writes; i++ {
		if err := leader.Write(ctx, []Command{PutApp(app(fmt.Sprintf("app-20261122100000-%04d", i)), 0)}); err != nil {
			t.Fatal(err)
		}
	}
	// Wait for the leader to have taken a snapshot beyond the start.
	deadline := time.Now().Add(10 * time.Second)
	for leader.Stats()["last_snapshot_index"] == "0" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if leader.Stats()["last_snapshot_index"] == "0" {
		t.Fatal("leader took no snapshot")
	}
	c.start(follower)
	c.converged(func(s *State) bool { return len(s.Apps) == writes && s.NextAppNumber == writes })
	if c.nodes[follower].Stats()["last_snapshot_index"] == "0" {
		t.Error("follower caught up without installing a snapshot")
	}
}

func TestFSMSnapshotRestoreRoundTrip(t *testing.T) {
	f := &fsm{state: NewState(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	entries := [][]Command{
		{BumpEpoch(), BumpEpoch()},
		{PutApp(app("app-20261122100000-0003"), 0), PutApp(finishedApp("app-20261122100000-0004", t0), 10)},
		{PutDriver(DriverRecord{ID: "driver-20261122100000-0002", State: wire.DriverRunning, WorkerID: "w1", IdempotencyKey: "k-drv"}, 0)},
		{PutWorker(WorkerRecord{ID: "w1", Host: "h", Port: 1, Cores: 8}), PutMaster(MasterRecord{ID: "m1", APIAddr: "http://x"})},
	}
	for i, cmds := range entries {
		data, _ := Encode(cmds)
		if err := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	snap, _ := f.Snapshot()
	var buf bytes.Buffer
	if err := snap.Persist(&bufferSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := &fsm{state: NewState(), log: f.log}
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if !g.snapshotState().Equal(f.snapshotState()) {
		t.Fatalf("restored state differs:\n got %+v\nwant %+v", g.snapshotState(), f.snapshotState())
	}
	// An empty state round-trips to usable maps.
	e := &fsm{state: NewState(), log: f.log}
	snap, _ = e.Snapshot()
	buf.Reset()
	snap.Persist(&bufferSink{Buffer: &buf})
	if err := g.Restore(io.NopCloser(&buf)); err != nil || g.snapshotState().Apps == nil {
		t.Fatalf("empty restore: %v", err)
	}
}

type bufferSink struct{ *bytes.Buffer }

func (b *bufferSink) ID() string    { return "test" }
func (b *bufferSink) Cancel() error { return nil }
func (b *bufferSink) Close() error  { return nil }

// FuzzFSMApply: whatever bytes a log entry holds, Apply never panics and a
// rejected entry changes nothing.
func FuzzFSMApply(f *testing.F) {
	data, _ := Encode([]Command{BumpEpoch(), PutWorker(WorkerRecord{ID: "w"})})
	f.Add(data)
	f.Add([]byte{byte(typeBatch), '[', '{', '"', 't', '"', ':', '2', '}', ']'})
	f.Add([]byte{255})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &fsm{state: NewState(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		_ = m.state.Apply(PutApp(app("a-1"), 0), nil)
		before := m.snapshotState()
		if err, _ := m.Apply(&raft.Log{Type: raft.LogCommand, Data: data}).(error); err != nil {
			if cmds, derr := Decode(data); derr != nil && !m.snapshotState().Equal(before) {
				t.Fatalf("an unreadable entry changed the state (%d commands)", len(cmds))
			}
		}
	})
}
