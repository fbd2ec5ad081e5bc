package master

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// keyedApp registers an app with an idempotency key, commits, and returns
// the reply.
func (h *harness) keyedApp(desc wire.AppDescription, key string) (wire.Submitted, error) {
	h.t.Helper()
	return run(h, func(reply reply[wire.Submitted]) { h.c.registerApp(desc, keyedRequest(key, desc), reply) })
}

func (h *harness) keyedDriver(desc wire.DriverDescription, key string) (wire.Submitted, error) {
	h.t.Helper()
	return run(h, func(reply reply[wire.Submitted]) { h.c.submitDriver(desc, keyedRequest(key, desc), reply) })
}

// replyLog keeps every reply its reply method is given, in order.
type replyLog struct {
	replies []wire.Submitted
	errs    []error
}

func (l *replyLog) reply(v wire.Submitted, err error) {
	l.replies, l.errs = append(l.replies, v), append(l.errs, err)
}

func TestKeyedRegistrationIsNotRepeated(t *testing.T) {
	h := newLeader(t, nil)
	desc := wire.AppDescription{Name: "a", Command: []string{"x"}}
	first, err := h.keyedApp(desc, "k-1")
	if err != nil || first.Existing {
		t.Fatalf("first registration: %+v %v", first, err)
	}
	again, err := h.keyedApp(desc, "k-1")
	if err != nil || again.ID != first.ID || !again.Existing {
		t.Fatalf("repeat: %+v %v, want %s (existing)", again, err, first.ID)
	}
	other, err := h.keyedApp(desc, "k-2")
	if err != nil || other.ID == first.ID || other.Existing {
		t.Fatalf("another key: %+v %v", other, err)
	}
	plain, err := h.keyedApp(desc, "")
	if err != nil || plain.ID == first.ID || plain.ID == other.ID {
		t.Fatalf("no key: %+v %v", plain, err)
	}
	if n := len(h.fx.state.Apps); n != 3 {
		t.Errorf("%d apps in the state, want 3", n)
	}
	if rec := h.fx.state.Apps[first.ID]; rec == nil || rec.IdempotencyKey != "k-1" {
		t.Errorf("the key is not in the record: %+v", rec)
	}
}

func TestKeyReusedForAnotherDescriptionIsRefused(t *testing.T) {
	h := newLeader(t, nil)
	first, err := h.keyedApp(wire.AppDescription{Name: "a", Command: []string{"x"}}, "k")
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.keyedApp(wire.AppDescription{Name: "b", Command: []string{"x"}}, "k")
	if statusOf(err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), first.ID) {
		t.Fatalf("key reused for another app: %v, want 422 naming %s", err, first.ID)
	}
	// The description counts as sent: spelling out a default is another
	// request (a retry repeats the request byte for byte).
	if _, err := h.keyedApp(wire.AppDescription{Name: "a", Command: []string{"x"}, MemoryPerExecutorMB: 1024}, "k"); statusOf(err) != http.StatusUnprocessableEntity {
		t.Fatalf("the description with a default spelled out: %v, want 422", err)
	}
	// Keys of apps and drivers are apart.
	d, err := h.keyedDriver(wire.DriverDescription{Command: []string{"d"}}, "k")
	if err != nil || d.Existing {
		t.Fatalf("driver with an app's key: %+v %v", d, err)
	}
	if len(h.fx.state.Apps) != 1 {
		t.Errorf("refusals changed the state: %d apps", len(h.fx.state.Apps))
	}
}

// A repeat that comes while the first is being committed waits for its
// outcome, whatever it is.
func TestRepeatWaitsForTheWriteInFlight(t *testing.T) {
	h := newLeader(t, nil)
	desc := wire.AppDescription{Command: []string{"x"}}
	var got replyLog
	other := wire.AppDescription{Command: []string{"y"}}
	h.c.registerApp(desc, keyedRequest("k", desc), got.reply)
	h.c.registerApp(desc, keyedRequest("k", desc), got.reply)
	h.c.registerApp(other, keyedRequest("k", other), got.reply) // refused at once
	if len(got.replies) != 1 || statusOf(got.errs[0]) != http.StatusUnprocessableEntity {
		t.Fatalf("before the commit: %v %v", got.replies, got.errs)
	}
	if len(h.fx.pending) != 1 {
		t.Fatalf("%d writes, want 1", len(h.fx.pending))
	}
	h.commit()
	if len(got.replies) != 3 || got.errs[1] != nil || got.errs[2] != nil {
		t.Fatalf("after the commit: %v %v", got.replies, got.errs)
	}
	a, b := got.replies[1], got.replies[2]
	if a.ID != b.ID || a.Existing || !b.Existing {
		t.Fatalf("first %+v, repeat %+v", a, b)
	}

	// A write whose outcome is unknown: the repeat hears the same 504.
	got = replyLog{}
	h.c.registerApp(desc, keyedRequest("k2", desc), got.reply)
	h.c.registerApp(desc, keyedRequest("k2", desc), got.reply)
	h.failWrites(persistence.ErrOutcomeUnknown)
	if len(got.errs) != 2 || statusOf(got.errs[0]) != http.StatusGatewayTimeout || statusOf(got.errs[1]) != http.StatusGatewayTimeout {
		t.Fatalf("outcome unknown: %v", got.errs)
	}
	// The key is free again: a retry creates the app.
	retry, err := h.keyedApp(desc, "k2")
	if err != nil || retry.Existing {
		t.Fatalf("retry after the failed write: %+v %v", retry, err)
	}
}

// The key is durable with the record: a new leader answers the repeat.
func TestKeysSurviveFailover(t *testing.T) {
	h := newLeader(t, nil)
	app, err := h.keyedApp(wire.AppDescription{Command: []string{"x"}}, "app-key")
	if err != nil {
		t.Fatal(err)
	}
	drv, err := h.keyedDriver(wire.DriverDescription{Command: []string{"d"}}, "drv-key")
	if err != nil {
		t.Fatal(err)
	}
	h.failover()
	h.pass(h.c.cfg.RecoveryTimeout + h.c.cfg.tickInterval())
	if h.c.status != wire.MasterAlive {
		t.Fatalf("status %s", h.c.status)
	}
	// The app's client never came back, so recovery finished it: it is
	// listed as completed, and its key still answers.
	if again, err := h.keyedApp(wire.AppDescription{Command: []string{"x"}}, "app-key"); err != nil || again.ID != app.ID || !again.Existing {
		t.Fatalf("app repeat after failover: %+v %v, want %s", again, err, app.ID)
	}
	if again, err := h.keyedDriver(wire.DriverDescription{Command: []string{"d"}}, "drv-key"); err != nil || again.ID != drv.ID || !again.Existing {
		t.Fatalf("driver repeat after failover: %+v %v, want %s", again, err, drv.ID)
	}
}

// Keys last as long as their app or driver is listed.
func TestKeyForgottenWithTheHistory(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.RetainedApps = 1 })
	desc := wire.AppDescription{Command: []string{"x"}}
	end := func(id string) {
		if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(id, wire.AppFinished, "done", reply) }); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := h.keyedApp(desc, "old")
	end(first.ID)
	if again, _ := h.keyedApp(desc, "old"); again.ID != first.ID {
		t.Fatalf("a completed app's key forgotten too early: %+v", again)
	}
	second, _ := h.keyedApp(desc, "new")
	end(second.ID) // pushes the first out of the completed list
	if _, ok := h.c.keys.ids[submissionKey{keyApp, "old"}]; ok {
		t.Error("the key of an app no longer listed is still indexed")
	}
	if fresh, err := h.keyedApp(desc, "old"); err != nil || fresh.ID == first.ID || fresh.Existing {
		t.Fatalf("key of a forgotten app: %+v %v", fresh, err)
	}
}

// A supervised driver relaunched under a new id takes the key along: a
// repeat gets the driver that runs now, and the key outlives the original's
// place in the history.
func TestKeyFollowsARelaunchedDriver(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.RetainedDrivers = 1 }, "w1")
	desc := wire.DriverDescription{Command: []string{"d"}, Supervise: true}
	first, err := h.keyedDriver(desc, "k")
	if err != nil {
		t.Fatal(err)
	}
	h.addWorker("w2", 4, 4096)
	h.c.removeWorker(h.c.workers["w1"], "test", nil)
	h.commit()
	old, _ := h.c.driver(first.ID)
	relaunch := old.RelaunchedAs
	if relaunch == "" {
		t.Fatalf("not relaunched: %+v", old)
	}
	if rec := h.fx.state.Drivers[relaunch]; rec == nil || rec.IdempotencyKey != "k" {
		t.Errorf("the relaunch does not carry the key: %+v", rec)
	}
	if again, err := h.keyedDriver(desc, "k"); err != nil || again.ID != relaunch || !again.Existing {
		t.Fatalf("repeat after a relaunch: %+v %v, want %s", again, err, relaunch)
	}
	// Another driver ends and pushes the original out of the history: the
	// key stays with the running relaunch, here and on a new leader.
	waiting := wire.DriverDescription{Command: []string{"p"}, Cores: 64} // no worker fits: it waits
	p, _ := h.keyedDriver(waiting, "")
	if _, err := run(h, func(reply reply[wire.DriverStatus]) { h.c.killDriver(p.ID, reply) }); err != nil {
		t.Fatal(err)
	}
	// Killing it again (a client retrying a kill whose answer it lost)
	// answers its final status.
	if v, err := run(h, func(reply reply[wire.DriverStatus]) { h.c.killDriver(p.ID, reply) }); err != nil || v.State != wire.DriverKilled {
		t.Fatalf("second kill: %+v %v, want the KILLED status", v, err)
	}
	if d, err := h.c.driver(first.ID); err == nil {
		t.Fatalf("the original is still listed: %+v", d)
	}
	if again, err := h.keyedDriver(desc, "k"); err != nil || again.ID != relaunch {
		t.Fatalf("repeat once the original left the history: %+v %v, want %s", again, err, relaunch)
	}
	h.failover()
	if again, err := h.keyedDriver(desc, "k"); err != nil || again.ID != relaunch {
		t.Fatalf("repeat on a new leader: %+v %v, want %s", again, err, relaunch)
	}
	// No worker claims it in recovery (the fake workers do not answer), so
	// it is relaunched again: the key follows.
	h.pass(h.c.cfg.RecoveryTimeout+h.c.cfg.tickInterval(), "w2")
	st, err := h.c.driver(relaunch)
	if err != nil || st.RelaunchedAs == "" {
		t.Fatalf("not relaunched after recovery: %+v", st)
	}
	if again, err := h.keyedDriver(desc, "k"); err != nil || again.ID != st.RelaunchedAs {
		t.Fatalf("repeat after a second relaunch: %+v %v, want %s", again, err, st.RelaunchedAs)
	}
}

// The hash is of the description as sent, before the master's own
// defaults: a retry that reaches a master with another --default-cores is
// the same request.
func TestKeyIgnoresTheMastersDefaults(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.DefaultCores = 4 })
	desc := wire.AppDescription{Command: []string{"x"}}
	first, err := h.keyedApp(desc, "k")
	if err != nil {
		t.Fatal(err)
	}
	h.c.cfg.DefaultCores = 8 // the next leader is configured otherwise
	h.failover()
	again, err := h.keyedApp(desc, "k")
	if err != nil || again.ID != first.ID {
		t.Fatalf("repeat on a master with other defaults: %+v %v, want %s", again, err, first.ID)
	}
}

// A keyed write in flight when leadership is lost and won again in the
// same process: its continuation still runs (the writer refuses or commits
// it), and the repeats that waited hear its outcome.
func TestKeyedWriteAcrossLeadershipChange(t *testing.T) {
	for _, committed := range []bool{false, true} {
		h := newLeader(t, nil)
		desc := wire.AppDescription{Command: []string{"x"}}
		var got replyLog
		h.c.registerApp(desc, keyedRequest("k", desc), got.reply)
		h.c.registerApp(desc, keyedRequest("k", desc), got.reply)
		stale := h.fx.pending
		h.fx.pending = nil
		if committed { // it reached the log before the leadership changed
			for _, c := range stale[0].cmds {
				if err := h.fx.state.Apply(c, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		h.c.revoked()
		h.c.elected()
		h.fx.state.Epoch++
		h.c.leadershipReady(h.c.gen, h.fx.state.Clone(), nil)
		// A repeat on the new leadership joins the write in flight.
		h.c.registerApp(desc, keyedRequest("k", desc), got.reply)
		if committed {
			stale[0].then(nil)
		} else {
			stale[0].then(errStaleProposal)
		}
		h.commit()
		if len(got.errs) != 3 {
			t.Fatalf("committed=%v: %d got.replies, want 3", committed, len(got.errs))
		}
		for i := range got.errs {
			if committed && (got.errs[i] != nil || got.replies[i].ID != got.replies[0].ID) {
				t.Errorf("committed: reply %d: %v %v, want the app's id", i, got.replies[i], got.errs[i])
			}
			if !committed && got.errs[i] == nil {
				t.Errorf("not committed: reply %d: %v, want an error", i, got.replies[i])
			}
		}
		// Either way, a retry now settles it: the app exists once.
		again, err := h.keyedApp(desc, "k")
		if err != nil {
			t.Fatalf("committed=%v: retry: %v", committed, err)
		}
		if n := len(h.fx.state.Apps); n != 1 {
			t.Errorf("committed=%v: %d apps in the state, want 1", committed, n)
		}
		if committed && (!again.Existing || again.ID != got.replies[0].ID) {
			t.Errorf("committed: retry %+v, want the committed app", again)
		}
	}
}

func TestCheckIdempotencyKey(t *testing.T) {
	t.Parallel()
	ok := map[string][]string{
		"":           nil,
		"abc":        {"abc"},
		"a-b_c.d:e+": {`"a-b_c.d:e+"`},
		"x/y=":       {"x/y="},
	}
	for want, values := range ok {
		if got, err := checkIdempotencyKey(values); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", values, got, err, want)
		}
	}
	for _, values := range [][]string{{""}, {`""`}, {"a b"}, {"é"}, {strings.Repeat("k", maxIdempotencyKey+1)}, {"a", "b"}, {"a\x00"}} {
		if _, err := checkIdempotencyKey(values); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), wire.IdempotencyKeyHeader) {
			t.Errorf("%q: %v, want a 400 naming the header", values, err)
		}
	}
}
