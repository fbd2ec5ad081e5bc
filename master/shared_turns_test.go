package master

import (
	"errors"
	"net/http"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// answer records one transition's reply.
type answer[T any] struct {
	v       T
	err     error
	replied bool
}

func (a *answer[T]) reply() reply[T] {
	return func(v T, err error) { a.v, a.err, a.replied = v, err, true }
}

func (a *answer[T]) status(t *testing.T, what string) int {
	t.Helper()
	if !a.replied {
		t.Fatalf("%s: no reply", what)
	}
	if a.err == nil {
		return http.StatusOK
	}
	return statusOf(a.err)
}

// The chaos suite's history had two creates of tenant scratch, sent at
// once through two masters to the leader, both answered 201: each checked
// the committed state before the other had committed. Writes of queues and
// tenants arrive here while others are in flight; each must decide against
// what those before it committed.
func TestQueueAndTenantWritesDecideAfterThoseInFlight(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	if _, err := h.setQueue("etl", wire.QueueSpec{}); err != nil {
		t.Fatal(err)
	}

	var first, second answer[wire.TenantCreated]
	h.c.createTenant("scratch", wire.TenantSpec{Queues: []string{"etl"}}, first.reply())
	h.c.createTenant("scratch", wire.TenantSpec{Queues: []string{"etl"}}, second.reply())
	h.commit()
	if s := first.status(t, "the first create"); s != http.StatusOK {
		t.Fatalf("the first create: %d %v", s, first.err)
	}
	if s := second.status(t, "the second create"); s != http.StatusConflict {
		t.Errorf("the second create of tenant scratch, sent while the first was in flight: %d %v, want 409", s, second.err)
	}
	if got := h.c.tenants["scratch"]; got == nil || got.TokenHash != tokenHash(first.v.Token) {
		t.Errorf("the tenant's token is not the one its creation answered")
	}

	// Two tenants of one Unix user, made at once: the second is refused.
	var u1, u2 answer[wire.TenantCreated]
	h.c.createTenant("a", wire.TenantSpec{Queues: []string{"etl"}, UnixUser: "svc"}, u1.reply())
	h.c.createTenant("b", wire.TenantSpec{Queues: []string{"etl"}, UnixUser: "svc"}, u2.reply())
	h.commit()
	if s1, s2 := u1.status(t, "tenant a"), u2.status(t, "tenant b"); s1 != http.StatusOK || s2 != http.StatusBadRequest {
		t.Errorf("two tenants of unix user svc made at once: %d and %d, want 200 and 400 (%v)", s1, s2, u2.err)
	}

	// A queue deleted while a tenant that names it is being made: refused.
	if _, err := h.setQueue("adhoc", wire.QueueSpec{}); err != nil {
		t.Fatal(err)
	}
	var named answer[wire.TenantCreated]
	var del answer[wire.None]
	h.c.createTenant("c", wire.TenantSpec{Queues: []string{"adhoc"}}, named.reply())
	h.c.deleteQueue("adhoc", del.reply())
	h.commit()
	if s := del.status(t, "the delete of adhoc"); s != http.StatusConflict || h.c.queues["adhoc"] == nil {
		t.Errorf("queue adhoc deleted while tenant c naming it was made: %d %v", s, del.err)
	}

	// Guarantees put at once that together exceed the cluster's 4 cores:
	// the second is checked against the first.
	g := func(cores int) wire.QueueSpec {
		return wire.QueueSpec{Guarantee: &wire.Amount{Cores: cores}}
	}
	var g1, g2 answer[wire.QueueStatus]
	h.c.putQueue("etl", g(3), g1.reply())
	h.c.putQueue("adhoc", g(3), g2.reply())
	h.commit()
	if s1, s2 := g1.status(t, "etl's guarantee"), g2.status(t, "adhoc's guarantee"); s1 != http.StatusOK || s2 < 400 {
		t.Errorf("guarantees of 3+3 cores on 4 put at once: %d and %d, want the second refused", s1, s2)
	}

	// A write whose commit fails ends its turn: the next one is made.
	var failed, after answer[wire.None]
	h.c.deleteTenant("scratch", failed.reply())
	h.c.deleteTenant("c", after.reply())
	if len(h.fx.pending) != 1 {
		t.Fatalf("%d writes in flight, want the first delete's alone", len(h.fx.pending))
	}
	p := h.fx.pending[0]
	h.fx.pending = nil
	p.then(errors.New("disk gone"))
	h.commit()
	if !failed.replied || failed.err == nil {
		t.Fatalf("the failed delete: %+v", failed)
	}
	if s := after.status(t, "the delete after a failed one"); s != http.StatusOK || h.c.tenants["c"] != nil {
		t.Errorf("the delete queued behind a failed one: %d %v", s, after.err)
	}
}

// A queue deleted while an app's or a driver's registration into it was
// being written left the app WAITING in no queue, with no reason, for
// ever: the deletion counted the committed apps only.
func TestAQueueIsNotDeletedUnderASubmissionInFlight(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	for _, q := range []string{"q", "d"} {
		if _, err := h.setQueue(q, wire.QueueSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	var app, driver answer[wire.Submitted]
	var delQ, delD answer[wire.None]
	h.c.registerApp(oneCoreApp("q", 0), keyed{}, app.reply())
	h.c.deleteQueue("q", delQ.reply())
	h.c.submitDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64, ProcessSpec: wire.ProcessSpec{Queue: "d"}}, keyed{}, driver.reply())
	h.c.deleteQueue("d", delD.reply())
	h.commit()
	if s := app.status(t, "the app"); s != http.StatusOK {
		t.Fatalf("the app's registration: %d %v", s, app.err)
	}
	if s := driver.status(t, "the driver"); s != http.StatusOK {
		t.Fatalf("the driver's submission: %d %v", s, driver.err)
	}
	for q, del := range map[string]*answer[wire.None]{"q": &delQ, "d": &delD} {
		if s := del.status(t, "the delete of "+q); s != http.StatusConflict || h.c.queues[q] == nil {
			t.Errorf("queue %s deleted while a submission into it was written: %d %v", q, s, del.err)
		}
	}
	if a := h.c.apps[app.v.ID]; a == nil || len(a.executors) == 0 {
		t.Errorf("the app in queue q was not placed")
	}
	// Once answered, the submission holds the queue as an active app does,
	// and nothing is left counted in flight.
	if len(h.c.registering.queues) != 0 {
		t.Errorf("submissions still counted in flight: %v", h.c.registering.queues)
	}
}

// A tenant deleted and made again while one of the old tenant's
// registrations was being written: the new tenant got the old one's app,
// which ran as the old tenant's Unix user.
func TestATenantIsNotMadeAgainUnderItsNamesakesSubmission(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	if _, err := h.setQueue("etl", wire.QueueSpec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := run(h, func(r reply[wire.TenantCreated]) {
		h.c.createTenant("t", wire.TenantSpec{Queues: []string{"etl"}, UnixUser: "olduser"}, r)
	}); err != nil {
		t.Fatal(err)
	}
	var del answer[wire.None]
	var app answer[wire.Submitted]
	var made answer[wire.TenantCreated]
	h.c.deleteTenant("t", del.reply())
	h.c.registerApp(oneCoreApp("etl", 0), keyed{tenant: "t"}, app.reply())
	h.c.createTenant("t", wire.TenantSpec{Queues: []string{"etl"}}, made.reply())
	h.commit()
	if s := del.status(t, "the delete"); s != http.StatusOK {
		t.Fatalf("the delete: %d %v", s, del.err)
	}
	if s := app.status(t, "the old tenant's app"); s != http.StatusOK {
		t.Fatalf("the app: %d %v", s, app.err)
	}
	if s := made.status(t, "the new tenant t"); s != http.StatusConflict || h.c.tenants["t"] != nil {
		t.Errorf("tenant t made again while its namesake's app was written: %d %v", s, made.err)
	}
	if len(h.c.registering.tenants) != 0 {
		t.Errorf("submissions still counted in flight: %v", h.c.registering.tenants)
	}
}
