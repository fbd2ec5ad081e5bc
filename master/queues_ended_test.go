package master

import (
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// A queue's write made durable after its leadership ended is answered as
// a success without being applied (commit): the new queue is then in no
// map of this master's, and the answer read it there and crashed the
// master (the chaos suite, a leader frozen past every timeout). It is the
// record written.
func TestAQueueWrittenAfterItsLeadershipEndedIsAnsweredFromItsRecord(t *testing.T) {
	h := newLeader(t, nil, "w1")
	var got wire.QueueStatus
	var gotErr error
	replied := false
	h.c.putQueue("late", wire.QueueSpec{Weight: weight(3)}, func(q wire.QueueStatus, err error) { got, gotErr, replied = q, err, true })
	if len(h.fx.pending) != 1 {
		t.Fatalf("%d writes pending, want the queue's", len(h.fx.pending))
	}
	h.c.revoked() // the leadership ends with the write in flight
	p := h.fx.pending[0]
	h.fx.pending = nil
	p.then(nil) // then it is durable
	if !replied || gotErr != nil || got.Name != "late" || got.Weight != 3 {
		t.Fatalf("the answer: %+v, %v (replied %v); want queue late of weight 3", got, gotErr, replied)
	}
	if _, ok := h.c.queues["late"]; ok {
		t.Error("the write of an ended leadership was applied")
	}
}
