package master

import (
	"errors"
	"testing"
	"time"
)

// A master that reaches fewer voters than a quorum says so; one that
// reaches a quorum (itself counted) does not.
func TestQuorumJudgedFromTheAsks(t *testing.T) {
	var p peerWatch
	now := time.Now()
	voters := []string{"m1", "m2", "m3"}
	p.judgeQuorum("m1", voters, now)
	if p.quorumLost() != nil {
		t.Error("m2 and m3 not asked yet: nothing says they are gone")
	}
	p.record("m2", errors.New("refused"), now)
	p.record("m3", errors.New("refused"), now)
	p.judgeQuorum("m1", voters, now)
	if p.quorumLost() == nil {
		t.Error("m2 and m3 refuse: want no quorum")
	}
	p.record("m2", nil, now)
	p.record("m3", errors.New("refused"), now)
	p.judgeQuorum("m1", voters, now)
	if q := p.quorumLost(); q != nil {
		t.Errorf("m1 and m2 answer: %+v, want a quorum", q)
	}
	p.record("m2", errors.New("refused"), now.Add(time.Second))
	p.judgeQuorum("m1", voters, now.Add(time.Second))
	if q := p.quorumLost(); q == nil || q.reached != 1 || q.voters != 3 {
		t.Errorf("only m1: %+v, want 1 of 3", q)
	}
	p.judgeQuorum("m1", []string{"m1"}, now)
	if p.quorumLost() != nil {
		t.Error("a single voter is its own quorum")
	}
}
