package master

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// The core's side of a closed heartbeat connection (worker_probe.go),
// with the fake clock and the probes answered by hand.

var (
	refused  = probeResult{outcome: probeRefused, err: syscall.ECONNREFUSED}
	answered = probeResult{outcome: probeAnswered}
	silent   = probeResult{outcome: probeSilent, err: errors.New("i/o timeout")}
)

// takeProbes returns the probes asked for since the last call.
func (h *harness) takeProbes() []probeRequest {
	p := h.fx.probes
	h.fx.probes = nil
	return p
}

// answer gives the core a probe's answer, as the loop would, and commits
// what follows.
func (h *harness) answer(p probeRequest, res probeResult) {
	h.t.Helper()
	h.clock.advance(p.delay)
	h.c.probeDone(p, res)
	h.commit()
}

// oneProbe checks that exactly one probe of worker was asked for, at the
// given attempt, and returns it.
func oneProbe(t *testing.T, h *harness, worker string, attempt int) probeRequest {
	t.Helper()
	ps := h.takeProbes()
	if len(ps) != 1 || ps[0].worker != worker || ps[0].attempt != attempt {
		t.Fatalf("probes %+v, want one of %s, attempt %d", ps, worker, attempt)
	}
	return ps[0]
}

func TestAClosedHeartbeatConnectionAsksForOneProbe(t *testing.T) {
	h := newLeader(t, nil, "w1")
	w := h.c.workers["w1"]
	h.c.heartbeatConnClosed("w1")
	p := oneProbe(t, h, "w1", 1)
	if p.addr != w.hostPort() || p.url != w.rec.Address || p.delay != probeFirstDelay {
		t.Errorf("probe %+v, want %s (%s) after %s", p, w.hostPort(), w.rec.Address, probeFirstDelay)
	}
	// Its other connection closing too (or the same hint twice) starts no
	// second sequence while the first is under way.
	h.c.heartbeatConnClosed("w1")
	if ps := h.takeProbes(); len(ps) != 0 {
		t.Errorf("a second close probed again: %+v", ps)
	}
	// A worker the master does not know is not probed.
	h.c.heartbeatConnClosed("nobody")
	if ps := h.takeProbes(); len(ps) != 0 {
		t.Errorf("an unknown worker probed: %+v", ps)
	}
}

// Refused twice, a gap apart, with no heartbeat between: removed as on a
// timeout, its executors LOST with a message that says why.
func TestTwoRefusalsRemoveTheWorkerAtOnce(t *testing.T) {
	h, w, a := leaderWithOneApp(t)
	sub, _, _ := h.c.subscribe(a.rec.ID)
	drain(sub)
	h.c.heartbeatConnClosed("w1")
	h.answer(oneProbe(t, h, "w1", 1), refused)
	second := oneProbe(t, h, "w1", 2)
	if second.delay != probeGap || second.seq == 0 {
		t.Errorf("second probe %+v, want one after %s", second, probeGap)
	}
	if w.state != wire.WorkerAlive || w.removing != nil {
		t.Fatalf("worker %s after one refusal, want ALIVE and not being removed", w.state)
	}
	h.answer(second, refused)
	if w.state != wire.WorkerDead {
		t.Fatalf("worker %s after two refusals, want DEAD", w.state)
	}
	if h.fx.state.Workers["w1"] != nil {
		t.Error("the worker's record is still in the state")
	}
	want := fmt.Sprintf("worker lost: worker w1's process is gone (its connection closed and nothing listens at %s)", w.hostPort())
	st, _ := h.c.app(a.rec.ID)
	lost := 0
	for _, e := range st.Executors {
		if e.WorkerID == "w1" {
			lost++
			if e.State != wire.ExecutorLost || e.Message != want {
				t.Errorf("executor %d: %s %q, want LOST %q", e.ID, e.State, e.Message, want)
			}
		}
	}
	if lost == 0 {
		t.Fatal("no executor of w1 in the app's status")
	}
	var told bool
	for _, ev := range drain(sub) {
		told = told || ev.Type == wire.EventExecutorLost && ev.Message == want
	}
	if !told {
		t.Errorf("the app's client was not told %q", want)
	}
	if len(h.c.probes.active) != 0 {
		t.Errorf("sequences left under way: %v", h.c.probes.active)
	}
	if ps := h.takeProbes(); len(ps) != 0 {
		t.Errorf("probed after the verdict: %+v", ps)
	}
}

// A heartbeat between the close and either answer is the worker alive:
// nothing changes, and the sequence ends.
func TestAHeartbeatDuringTheProbesChangesNothing(t *testing.T) {
	for _, after := range []int{1, 2} {
		t.Run(fmt.Sprintf("before answer %d", after), func(t *testing.T) {
			h := newLeader(t, nil, "w1")
			w := h.c.workers["w1"]
			h.c.heartbeatConnClosed("w1")
			p := oneProbe(t, h, "w1", 1)
			if after == 2 {
				h.answer(p, refused)
				p = oneProbe(t, h, "w1", 2)
			}
			h.clock.advance(10 * time.Millisecond)
			if _, err := h.c.heartbeat("w1", wire.Heartbeat{}); err != nil {
				t.Fatal(err)
			}
			h.answer(p, refused)
			if w.state != wire.WorkerAlive || w.removing != nil {
				t.Fatalf("worker %s, want ALIVE: it heartbeat during its probes", w.state)
			}
			if ps := h.takeProbes(); len(ps) != 0 {
				t.Errorf("probed on after a heartbeat: %+v", ps)
			}
			// A later close starts a sequence of its own.
			h.c.heartbeatConnClosed("w1")
			oneProbe(t, h, "w1", 1)
		})
	}
}

// A probe that connects, or gets no answer (a partition, a frozen or
// powered-off host), leaves the worker to its heartbeat timeout, which
// judges it exactly as without the probe.
func TestAProbeThatConnectsOrTimesOutLeavesItToTheTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []probeResult
	}{
		{"answered", []probeResult{answered}},
		{"silent", []probeResult{silent}},
		{"refused then answered", []probeResult{refused, answered}},
		{"refused then silent", []probeResult{refused, silent}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLeader(t, nil, "w1", "w2")
			w := h.c.workers["w1"]
			h.c.heartbeatConnClosed("w1")
			for i, res := range tc.answers {
				h.answer(oneProbe(t, h, "w1", i+1), res)
			}
			if ps := h.takeProbes(); len(ps) != 0 || len(h.c.probes.active) != 0 {
				t.Fatalf("probes %+v (%d under way) after %s, want the sequence over", ps, len(h.c.probes.active), tc.name)
			}
			h.pass(h.c.cfg.WorkerTimeout-time.Second, "w2")
			if w.state != wire.WorkerAlive {
				t.Fatalf("worker %s before its timeout, want ALIVE", w.state)
			}
			h.pass(2*time.Second, "w2")
			if w.state != wire.WorkerDead {
				t.Fatalf("worker %s past its timeout, want DEAD", w.state)
			}
		})
	}
}

// Only an ALIVE leader probes, and an answer that comes back under another
// leadership decides nothing.
func TestOnlyTheLeaderProbes(t *testing.T) {
	follower := newHarness(t, nil)
	follower.c.heartbeatConnClosed("w1")
	if ps := follower.takeProbes(); len(ps) != 0 {
		t.Errorf("a follower probed: %+v", ps)
	}

	h := newLeader(t, nil, "w1")
	h.c.heartbeatConnClosed("w1")
	p := oneProbe(t, h, "w1", 1)
	h.failover() // recovering: every worker UNKNOWN
	h.c.heartbeatConnClosed("w1")
	if ps := h.takeProbes(); len(ps) != 0 {
		t.Errorf("a recovering leader probed: %+v", ps)
	}
	h.answer(p, refused)
	if ps := h.takeProbes(); len(ps) != 0 {
		t.Errorf("an answer from the former leadership went on probing: %+v", ps)
	}
	if w := h.c.workers["w1"]; w == nil || w.state == wire.WorkerDead || w.removing != nil {
		t.Errorf("worker %+v after a former leadership's answer, want it left as it was", w)
	}
}

// A late answer of a sequence that ended decides nothing for the next.
func TestALateAnswerIsIgnored(t *testing.T) {
	h := newLeader(t, nil, "w1")
	w := h.c.workers["w1"]
	h.c.heartbeatConnClosed("w1")
	first := oneProbe(t, h, "w1", 1)
	h.answer(first, answered) // that sequence is over
	h.c.heartbeatConnClosed("w1")
	second := oneProbe(t, h, "w1", 1)
	stale := first
	stale.attempt = probeAttempts // as if the old one were at its last probe
	h.answer(stale, refused)
	if w.state != wire.WorkerAlive || w.removing != nil {
		t.Fatalf("worker %s after a stale answer, want ALIVE", w.state)
	}
	h.answer(second, refused)
	oneProbe(t, h, "w1", 2) // the live sequence goes on
}

// No more than maxProbeSequences run at once.
func TestProbeSequencesAreBounded(t *testing.T) {
	h := newLeader(t, nil)
	for i := range maxProbeSequences + 3 {
		h.addWorker(fmt.Sprintf("w%03d", i), 1, 1024)
	}
	for id := range h.c.workers {
		h.c.heartbeatConnClosed(id)
	}
	ps := h.takeProbes()
	if len(ps) != maxProbeSequences {
		t.Fatalf("%d probes at once, want %d", len(ps), maxProbeSequences)
	}
	h.answer(ps[0], answered) // one ends: there is room for one more
	// The others' connections close again (not the answered one's: in the
	// map's random order it could take the room itself, as it may).
	for id := range h.c.workers {
		if id != ps[0].worker {
			h.c.heartbeatConnClosed(id)
		}
	}
	if more := h.takeProbes(); len(more) != 1 || more[0].worker == ps[0].worker {
		t.Fatalf("probes %+v after one ended, want 1 of another worker", more)
	}
}
