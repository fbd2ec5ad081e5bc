package persistence

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Two of three masters gone for good: RecoverRaft turns the survivor's
// directory into a cluster of itself alone, with everything it held, which
// elects itself when started and grows back through Join.
func TestRecoverRaftMakesTheSurvivorACluster(t *testing.T) {
	c := newRaftCluster(t, 3, nil)
	leader := c.leader()
	ctx := t.Context()
	for _, q := range []string{"etl", "adhoc", "batch"} {
		if err := leader.Write(ctx, []Command{PutQueue(QueueRecord{Name: q})}); err != nil {
			t.Fatal(err)
		}
	}
	c.converged(func(s *State) bool { return len(s.Queues) == 3 })
	// The survivor: a follower, cut off from the others once they die.
	survivor := c.follower(leader)
	for id := range c.peers {
		c.stop(id)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec, err := RecoverRaft(RaftConfig{ID: survivor, Addr: c.peers[survivor], Dir: c.dirs[survivor], Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Before) != 3 || len(rec.After) != 1 || rec.After[0].ID != survivor || !rec.After[0].Voter || len(rec.State.Queues) != 3 || rec.Index == 0 {
		t.Fatalf("recovered %+v", rec)
	}

	// Started alone, it leads at once, with the state; others join it.
	c.open(RaftConfig{ID: survivor, Addr: c.peers[survivor], Dir: c.dirs[survivor], Peers: c.peers})
	r := c.leader()
	if r != c.nodes[survivor] {
		t.Fatal("another master leads")
	}
	if got := servers(t, r); strings.Join(got, ",") != survivor+"@"+c.peers[survivor] {
		t.Errorf("configuration %v, want %s alone", got, survivor)
	}
	if err := r.Write(ctx, []Command{PutQueue(QueueRecord{Name: "after"})}); err != nil {
		t.Fatalf("a write to the recovered master: %v", err)
	}
	for id := range c.peers {
		if id == survivor {
			continue
		}
		c.dirs[id] = t.TempDir() // their data is gone
		addr := freeAddr(t)
		c.startAt(id, addr)
		if err := r.Join(ctx, id, addr); err != nil {
			t.Fatalf("joining %s: %v", id, err)
		}
	}
	c.converged(func(s *State) bool { return len(s.Queues) == 4 })
	if got := servers(t, r); len(got) != 3 {
		t.Errorf("configuration after the joins: %v", got)
	}
}

// RecoverRaft refuses, changing nothing: a directory without Raft state,
// an id its configuration does not list, a master still running on it,
// and a log holding an entry this build cannot read.
func TestRecoverRaftRefuses(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := RecoverRaft(RaftConfig{ID: "m1", Addr: "127.0.0.1:1", Dir: t.TempDir(), Logger: logger}); !errors.Is(err, ErrNothingToRecover) {
		t.Errorf("an empty directory: %v", err)
	}

	c := newRaftCluster(t, 3, nil)
	leader := c.leader()
	if err := leader.Write(t.Context(), []Command{BumpEpoch()}); err != nil {
		t.Fatal(err)
	}
	id := c.follower(leader)
	start := time.Now()
	if _, err := RecoverRaft(RaftConfig{ID: id, Addr: c.peers[id], Dir: c.dirs[id], Logger: logger}); err == nil || !strings.Contains(err.Error(), "stop this master first") {
		t.Errorf("a running master's directory: %v", err)
	} else if time.Since(start) > 5*time.Second {
		t.Errorf("the refusal took %s", time.Since(start))
	}
	unknown := []byte{77, '{', '}'} // a type of a later version, not ignorable
	if err := leader.raft.Apply(unknown, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // replicated to the followers
	for id := range c.peers {
		c.stop(id)
	}
	if _, err := RecoverRaft(RaftConfig{ID: "m9", Addr: c.peers[id], Dir: c.dirs[id], Logger: logger}); err == nil || !strings.Contains(err.Error(), `does not list "m9"`) {
		t.Errorf("an id the directory does not list: %v", err)
	}
	if _, err := RecoverRaft(RaftConfig{ID: id, Addr: c.peers[id], Dir: c.dirs[id], Logger: logger}); !errors.Is(err, ErrUnreadableEntry) {
		t.Errorf("a log with an unreadable entry: %v", err)
	}
	// Nothing changed: the three masters still form their cluster.
	for id := range c.peers {
		c.start(id)
	}
	if got := servers(t, c.leader()); len(got) != 3 {
		t.Errorf("configuration after the refusals: %v", got)
	}
}
