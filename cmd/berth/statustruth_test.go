package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

func boolPtr(b bool) *bool { return &b }

// What berth status says of the masters: unreachable ones and since when,
// not their last role; no leader and no quorum; sorted by id.
func TestStatusSaysWhichMastersAnswer(t *testing.T) {
	now := time.Date(2026, 1, 2, 14, 2, 51, 0, time.Local)
	down := now.Add(-40 * time.Second)
	contact := now.Add(-41 * time.Second)
	st := wire.ClusterStatus{MasterID: "m2", Status: wire.MasterStandby, View: wire.ViewFollower, LeaderContact: &contact,
		Masters: []wire.MasterNode{
			{ID: "m3", Voter: true, Reachable: boolPtr(false), UnreachableSince: &down, Unreachable: "Get \"https://10.0.0.3:7077/v1/raft/status\": dial tcp 10.0.0.3:7077: connect: connection refused"},
			{ID: "m1", Voter: true, Leader: false, Reachable: boolPtr(false), UnreachableSince: &down},
			{ID: "m2", Voter: true, Reachable: boolPtr(true)},
		}}
	var b bytes.Buffer
	printMasters(&b, st, now)
	out := b.String()
	for _, want := range []string{"leader none", "no leader: 2 of 3 masters unreachable, no quorum; writes are refused; last known state as of 14:02:10 (41s ago, when master m2 last heard from a leader)",
		"UNREACHABLE since 14:02:11 (40s ago): connect: connection refused", "follower (answered)", "its state is UNKNOWN"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if i1, i2, i3 := strings.Index(out, "  m1"), strings.Index(out, "  m2"), strings.Index(out, "  m3"); !(i1 < i2 && i2 < i3) {
		t.Errorf("masters not sorted by id:\n%s", out)
	}

	// A leader, one master down: the others keep a quorum.
	st = wire.ClusterStatus{MasterID: "m1", View: wire.ViewLeader, Leader: "https://10.0.0.1:7077", LeaderID: "m1", Masters: []wire.MasterNode{
		{ID: "m1", Voter: true, Leader: true, Reachable: boolPtr(true)}, {ID: "m2", Voter: true, Reachable: boolPtr(true)},
		{ID: "m3", Voter: true, Reachable: boolPtr(false), UnreachableSince: &down}}}
	if got := quorumLine(st, now); got != "1 of 3 masters unreachable; the other 2 keep a quorum" {
		t.Errorf("one of three down: %q", got)
	}
	// No leader, a quorum: an election.
	st.Leader, st.LeaderID, st.LeaderContact = "", "", nil
	if got := quorumLine(st, now); !strings.HasPrefix(got, "no leader: an election is under way (2 of 3 masters reachable, a quorum)") ||
		!strings.Contains(got, "has not heard from a leader since it started") {
		t.Errorf("an election: %q", got)
	}
	// No leader, one master down and one never asked: no quorum claimed.
	st.Masters[1].Reachable = nil
	if got := quorumLine(st, now); !strings.HasPrefix(got, "no leader: 1 of 3 masters reachable, 1 unreachable, 1 not asked by master m1") ||
		!strings.Contains(got, "whether a quorum is up is not known here") {
		t.Errorf("one down, one not asked: %q", got)
	}
	st.Masters[1].Reachable = boolPtr(true)
	// All well, and one master alone: nothing to say.
	st.Masters[2].Reachable, st.Leader = boolPtr(true), "https://10.0.0.1:7077"
	if got := quorumLine(st, now); got != "" {
		t.Errorf("all well: %q", got)
	}
	if got := quorumLine(wire.ClusterStatus{Leader: "http://127.0.0.1:7077", LeaderID: "m"}, now); got != "" {
		t.Errorf("one master: %q", got)
	}
}

// berth run's waiting lines change only when the reason does, numbers
// aside (a countdown is no news).
func TestWaitingChangesNumbersAside(t *testing.T) {
	if withoutDigits("waiting: next try in 1.2s") != withoutDigits("waiting: next try in 0.7s") {
		t.Error("a countdown counted as a change")
	}
	if withoutDigits("waiting: no worker has 4 free cores") == withoutDigits("cannot start: no worker has 4 cores") {
		t.Error("another reason not counted as a change")
	}
}
