package election

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"
)

// recorder is a Candidate that records its calls.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) ElectedLeader()     { r.add("elected") }
func (r *recorder) RevokedLeadership() { r.add("revoked") }
func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

// waitFor polls until the recorded calls equal want.
func (r *recorder) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		got := append([]string(nil), r.calls...)
		r.mu.Unlock()
		if reflect.DeepEqual(got, want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("calls %v, want %v", r.calls, want)
}

type fakeNode struct {
	ch          chan bool
	leader      bool
	transferred int
	// transferBy is the deadline of the context TransferLeadership got.
	transferBy time.Time
}

func (n *fakeNode) LeadershipChanges() <-chan bool { return n.ch }
func (n *fakeNode) LeaderID() string               { return "m2" }
func (n *fakeNode) IsLeader() bool                 { return n.leader }
func (n *fakeNode) TransferLeadership(ctx context.Context) error {
	n.transferred++
	n.transferBy, _ = ctx.Deadline()
	n.leader = false
	n.ch <- false
	return nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestRaftAgentAlternatesAndHandlesFlaps(t *testing.T) {
	node := &fakeNode{ch: make(chan bool, 8)}
	a := NewRaft(node, quiet())
	r := &recorder{}
	a.Start(r)
	node.ch <- false // not leading: nothing to revoke
	node.ch <- true
	r.waitFor(t, "elected")
	node.ch <- true // leadership lost and regained unseen: start over
	r.waitFor(t, "elected", "revoked", "elected")
	node.ch <- false
	r.waitFor(t, "elected", "revoked", "elected", "revoked")
	if a.Leader() != "m2" {
		t.Errorf("Leader() = %q", a.Leader())
	}
	a.Stop()
	r.waitFor(t, "elected", "revoked", "elected", "revoked")
}

func TestRaftAgentStopHandsLeadershipOver(t *testing.T) {
	node := &fakeNode{ch: make(chan bool, 8)}
	a := NewRaft(node, quiet())
	r := &recorder{}
	a.Start(r)
	node.leader = true
	node.ch <- true
	r.waitFor(t, "elected")
	a.Stop()
	stopped := time.Now()
	if node.transferred != 1 {
		t.Fatalf("leadership transferred %d times on stop, want 1", node.transferred)
	}
	// The wait for the handover is bounded, so a stuck one cannot hold
	// the master up.
	if node.transferBy.IsZero() || node.transferBy.After(stopped.Add(transferTimeout)) {
		t.Errorf("transfer context deadline %v, want one within %s of Stop", node.transferBy, transferTimeout)
	}
	r.waitFor(t, "elected", "revoked")
}

func TestSingleIsLeaderAtOnce(t *testing.T) {
	s := NewSingle("m1")
	r := &recorder{}
	s.Start(r)
	r.waitFor(t, "elected")
	if s.Leader() != "m1" {
		t.Errorf("Leader() = %q", s.Leader())
	}
	s.Stop()
	r.waitFor(t, "elected", "revoked")
	s.Stop()
	r.waitFor(t, "elected", "revoked")
}
