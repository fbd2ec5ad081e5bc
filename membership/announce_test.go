package membership

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// self is the master being announced.
var self = wire.JoinRequest{ID: "m4", RaftAddr: "127.0.0.1:7180", APIAddr: "http://127.0.0.1:7080"}

// announce runs Announce with the fakes; the deadline only stops a test
// whose Announce would never return (the pace does not wait).
func announce(t *testing.T, ctx context.Context, c *fakeCluster, join []string, p *pace, logs *logBuffer) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return Announce(ctx, c, Config{Self: self, Join: join, Secret: secret, Logger: logs.logger(), Pace: p.wait})
}

// asked checks that m got n join requests, all for self.
func asked(t *testing.T, name string, m *fakeMaster, n int) {
	t.Helper()
	got := m.requests()
	if len(got) != n {
		t.Errorf("%s was asked %d times, want %d", name, len(got), n)
	}
	for _, req := range got {
		if req != self {
			t.Errorf("%s was asked to add %+v, want %+v", name, req, self)
		}
	}
}

func logged(t *testing.T, logs *logBuffer, msgs ...string) {
	t.Helper()
	for _, msg := range msgs {
		if !strings.Contains(logs.String(), msg) {
			t.Errorf("log lacks %q:\n%s", msg, logs)
		}
	}
}

func TestAnnounceRetriesWithBackoffUntilAMasterAccepts(t *testing.T) {
	c := newFakeCluster()
	m := newFakeMaster(t, refusingFirst(7, accepting(c)))
	p, logs := &pace{}, &logBuffer{}
	if err := announce(t, context.Background(), c, []string{m.URL}, p, logs); err != nil {
		t.Fatal(err)
	}
	asked(t, "the --join master", m, 8)
	// Seven refusals, then a pause for the record to replicate.
	ms := time.Millisecond
	want := []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms, 5000 * ms}
	if got := p.waited(); !slices.Equal(got, want) {
		t.Errorf("pauses %v, want %v", got, want)
	}
	logged(t, logs, "announcing this master failed; retrying", "the leader added this master", "cluster knows this master", "id=m4")
}

func TestAnnounceFollowsARedirectToTheLeader(t *testing.T) {
	c := newFakeCluster()
	leader := newFakeMaster(t, accepting(c))
	follower := newFakeMaster(t, redirectingTo(leader))
	p, logs := &pace{}, &logBuffer{}
	if err := announce(t, context.Background(), c, []string{follower.URL}, p, logs); err != nil {
		t.Fatal(err)
	}
	asked(t, "the follower", follower, 1)
	asked(t, "the leader", leader, 1)
	if got := len(p.waited()); got != 1 {
		t.Errorf("paused %d times, want 1 (for the record to replicate)", got)
	}
}

// The leader this master knows is asked rather than the --join masters,
// unless it is this master or its API address is not recorded.
func TestAnnounceAsksTheLeaderItKnows(t *testing.T) {
	cases := []struct {
		name        string
		leader      string
		recorded    bool // the leader's API address is in the state
		leaderAsked bool // else the --join master is
	}{
		{"leader recorded", "m1", true, true},
		{"no leader", "", false, false},
		{"leader not recorded", "m1", false, false},
		// Its own stale record must not be taken for the leader's.
		{"this master leads", self.ID, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster()
			want, other := accepting(c), unexpected(t)
			if !tc.leaderAsked {
				want, other = other, want
			}
			leader, join := newFakeMaster(t, want), newFakeMaster(t, other)
			c.setLeader(tc.leader)
			if tc.recorded {
				c.record(tc.leader, leader.URL)
			}
			if err := announce(t, context.Background(), c, []string{join.URL}, &pace{}, &logBuffer{}); err != nil {
				t.Fatal(err)
			}
			if tc.leaderAsked {
				asked(t, "the leader", leader, 1)
			} else {
				asked(t, "the --join master", join, 1)
			}
		})
	}
}

func TestAnnounceStopsAtOnceWhenTheClusterKnowsThisMaster(t *testing.T) {
	c := newFakeCluster()
	c.record(self.ID, self.APIAddr)
	m := newFakeMaster(t, unexpected(t))
	p, logs := &pace{}, &logBuffer{}
	if err := announce(t, context.Background(), c, []string{m.URL}, p, logs); err != nil {
		t.Fatal(err)
	}
	if got := p.waited(); len(got) != 0 {
		t.Errorf("paused %v", got)
	}
	logged(t, logs, "cluster knows this master")
}

// A master that restarted with another API address is announced again:
// the record it finds is stale.
func TestAnnounceAsksAgainWhenTheRecordedAddressIsStale(t *testing.T) {
	c := newFakeCluster()
	c.record(self.ID, "http://127.0.0.1:7077")
	m := newFakeMaster(t, accepting(c))
	if err := announce(t, context.Background(), c, []string{m.URL}, &pace{}, &logBuffer{}); err != nil {
		t.Fatal(err)
	}
	asked(t, "the --join master", m, 1)
}

// A master started with --peers has no one to ask until a leader is known.
func TestAnnounceWithoutJoinWaitsForALeader(t *testing.T) {
	c := newFakeCluster()
	leader := newFakeMaster(t, accepting(c))
	p, logs := &pace{}, &logBuffer{}
	p.between = func(n int) {
		if n == 3 {
			c.record("m1", leader.URL)
			c.setLeader("m1")
		}
	}
	if err := announce(t, context.Background(), c, nil, p, logs); err != nil {
		t.Fatal(err)
	}
	asked(t, "the leader", leader, 1)
	if got := len(p.waited()); got != 4 {
		t.Errorf("paused %d times, want 3 without a leader and 1 after it accepted", got)
	}
	logged(t, logs, "waiting for a leader")
}

func TestAnnounceStopsWhenItsContextEnds(t *testing.T) {
	c := newFakeCluster()
	m := newFakeMaster(t, refusingFirst(1000, accepting(c)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, logs := &pace{}, &logBuffer{}
	p.between = func(n int) {
		if n == 3 {
			cancel()
		}
	}
	err := announce(t, ctx, c, []string{m.URL}, p, logs)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Announce answered %v, want context.Canceled", err)
	}
	asked(t, "the --join master", m, 3)
	logged(t, logs, "stopped announcing this master")

	// Ended before it starts: nothing is asked.
	idle := newFakeMaster(t, unexpected(t))
	if err := announce(t, ctx, c, []string{idle.URL}, &pace{}, logs); !errors.Is(err, context.Canceled) {
		t.Fatalf("Announce with an ended context answered %v", err)
	}
}

func TestRealPaceReturnsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := RealPace(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("RealPace answered %v", err)
	}
}
