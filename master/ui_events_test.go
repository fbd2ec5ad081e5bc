package master

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// limitEvents are the executor-limit events among evs.
func limitEvents(evs []wire.AppEvent) []wire.AppEvent {
	return slices.DeleteFunc(slices.Clone(evs), func(ev wire.AppEvent) bool { return ev.Type != wire.EventExecutorLimitChanged })
}

// An executor-limit change is told to the app's stream and kept for its UI
// page once its write commits, never before; a change whose write fails is
// never told, and a limit set again to what it is tells nothing new.
func TestLimitChangeIsToldOnceCommitted(t *testing.T) {
	h, _, a := leaderWithOneApp(t)
	sub, _, err := h.c.subscribe(a.rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.c.setExecutorLimit(a.rec.ID, 3, func(wire.ExecutorLimit, error) {})
	if got := limitEvents(append(drain(sub), a.recent...)); len(got) != 0 {
		t.Fatalf("told before the write committed: %+v", got)
	}
	h.commit()
	got := limitEvents(drain(sub))
	if len(got) != 1 || got[0].Message != "executor limit set to 3 (was none)" || got[0].AppID != a.rec.ID {
		t.Fatalf("the stream after the commit: %+v", got)
	}
	if kept := limitEvents(a.recent); len(kept) != 1 || kept[0] != got[0] {
		t.Fatalf("kept for the UI: %+v", kept)
	}

	h.c.setExecutorLimit(a.rec.ID, 1, func(wire.ExecutorLimit, error) {})
	h.failWrites(errors.New("disk full"))
	if got := limitEvents(append(drain(sub), a.recent...)); len(got) != 1 {
		t.Fatalf("a failed change was told: %+v", got)
	}
	if _, err := run(h, func(reply reply[wire.ExecutorLimit]) { h.c.setExecutorLimit(a.rec.ID, 3, reply) }); err != nil {
		t.Fatal(err)
	}
	if got := limitEvents(drain(sub)); len(got) != 0 {
		t.Fatalf("the same limit again was told: %+v", got)
	}
	if _, err := run(h, func(reply reply[wire.ExecutorLimit]) { h.c.setExecutorLimit(a.rec.ID, 0, reply) }); err != nil {
		t.Fatal(err)
	}
	if got := limitEvents(drain(sub)); len(got) != 1 || got[0].Message != "executor limit set to 0 (was 3)" {
		t.Fatalf("lowered to 0: %+v", got)
	}
	// A run of changes (dynamic allocation) is heard whole on the stream but
	// kept as one entry of the recent events, the latest, so that it cannot
	// push the app's other events off its page.
	for _, n := range []int{5, 6} {
		if _, err := run(h, func(reply reply[wire.ExecutorLimit]) { h.c.setExecutorLimit(a.rec.ID, n, reply) }); err != nil {
			t.Fatal(err)
		}
	}
	if got := limitEvents(drain(sub)); len(got) != 2 {
		t.Fatalf("the stream heard %d of two changes", len(got))
	}
	last := a.recent[len(a.recent)-1]
	if last.Message != "executor limit set to 6 (was 5)" {
		t.Fatalf("the latest recent event: %+v", last)
	}
	for i := 1; i < len(a.recent); i++ {
		if a.recent[i].Type == wire.EventExecutorLimitChanged && a.recent[i-1].Type == wire.EventExecutorLimitChanged {
			t.Fatalf("two limit changes in a row kept: %+v, %+v", a.recent[i-1], a.recent[i])
		}
	}
}

// An ended driver says when it ended, as its final record does: in the
// leader's status, in a follower's (from the record), and after a
// failover; an active one has no end.
func TestDriverEndTimeIsShown(t *testing.T) {
	h := newHarness(t, nil)
	h.lead(nil)
	v, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.submitDriver(wire.DriverDescription{Command: []string{"d"}}, keyed{}, reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	id := v.ID
	if st, _ := h.c.driver(id); st.EndedAt != nil {
		t.Fatalf("a waiting driver has an end: %v", st.EndedAt)
	}
	h.clock.advance(90 * time.Second)
	killedAt := h.clock.t
	h.c.killDriver(id, func(wire.DriverStatus, error) {})
	h.clock.advance(time.Second) // the write commits later than it was decided
	h.commit()
	h.clock.advance(time.Minute)
	check := func(where string, st *wire.DriverStatus) {
		t.Helper()
		if st == nil || st.State != wire.DriverKilled || st.EndedAt == nil || !st.EndedAt.Equal(killedAt) {
			t.Errorf("%s: %+v, want KILLED and ended at %s", where, st, killedAt)
		}
	}
	st, _ := h.c.driver(id)
	check("the leader", &st)
	rec := recordDriverStatus(h.fx.state.Drivers[id])
	check("a follower", &rec)
	h.failover()
	h.commit()
	st, _ = h.c.driver(id)
	check("after a failover", &st)
}
