package master

import (
	"cmp"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Tenants (docs/QUEUES.md): a team's credential. A tenant submits into its
// queues and manages what it submitted; a driver it submitted acts for it.
// Its token is shown once, at its creation; the masters keep its SHA-256,
// written through the log, so every master checks it from its replica and
// a deleted tenant's token stops working everywhere as the deletion
// commits. Its apps and drivers keep running.

// loadTenants takes the tenants of a new leader's state.
func (c *core) loadTenants(s *persistence.State) {
	c.tenants = maps.Clone(s.Tenants)
	if c.tenants == nil {
		c.tenants = map[string]*persistence.TenantRecord{}
	}
}

func (c *core) sortedTenants() []*persistence.TenantRecord {
	out := make([]*persistence.TenantRecord, 0, len(c.tenants))
	for _, name := range slices.Sorted(maps.Keys(c.tenants)) {
		out = append(out, c.tenants[name])
	}
	return out
}

// createTenant makes tenant name with its token, answered once durable;
// an existing tenant is refused (delete it first: its token is gone).
func (c *core) createTenant(name string, spec wire.TenantSpec, answer reply[wire.TenantCreated]) {
	inTurn(c, answer, func(reply reply[wire.TenantCreated]) {
		switch {
		case !c.leading():
			reply.fail(c.notLeader())
			return
		case c.tenants[name] != nil:
			reply.fail(httpx.Coded(http.StatusConflict, wire.CodeWrongState, "tenant %s exists: delete it first (its token is shown only at its creation)", name))
			return
		case c.tenantHasWork(name):
			// A new tenant of the name would manage what the old one left.
			reply.fail(httpx.Coded(http.StatusConflict, wire.CodeWrongState, "tenant %s was deleted, but apps or drivers it submitted still run: kill them, or wait for them to end, before a tenant of that name is made again", name))
			return
		}
		if err := admission.UnixUserFree(name, spec.UnixUser, c.tenants); err != nil {
			reply.fail(err)
			return
		}
		if holder := c.unixUserRunning(name, spec.UnixUser); holder != "" {
			reply.fail(httpx.Coded(http.StatusConflict, wire.CodeWrongState, "unixUser %s: apps or drivers of deleted tenant %s still run as it: a new tenant of that user could signal them and read their environments; kill them, or wait for them to end", spec.UnixUser, holder))
			return
		}
		for _, q := range spec.Queues {
			if c.queues[q] == nil {
				reply.fail(httpx.Coded(http.StatusBadRequest, wire.CodeUnknownQueue, "queues: no queue %q (berth queue set %s)", q, q))
				return
			}
		}
		token := mintTenantToken(name)
		rec := persistence.TenantRecord{Name: name, Queues: slices.Clone(spec.Queues), TokenHash: tokenHash(token), UnixUser: spec.UnixUser,
			DefaultQueue: spec.DefaultQueue, CreatedAt: c.now()}
		c.commit([]persistence.Command{persistence.PutTenant(rec)}, func() {
			c.tenants[name] = &rec
			c.log.Info("tenant created", "tenant", name, "queues", rec.Queues)
		}, func(err error) {
			if err != nil {
				reply.fail(err)
				return
			}
			reply(wire.TenantCreated{Name: name, Token: token}, nil)
		})
	})
}

// mintTenantToken makes a tenant's token: bt.<name>.<random>.
func mintTenantToken(name string) string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return wire.TenantTokenPrefix + name + "." + base64.RawURLEncoding.EncodeToString(b[:])
}

// deleteTenant removes tenant name: its token stops working; what it
// submitted runs on.
func (c *core) deleteTenant(name string, answer reply[wire.None]) {
	inTurn(c, answer, func(reply reply[wire.None]) {
		switch {
		case !c.leading():
			reply.fail(c.notLeader())
			return
		case c.tenants[name] == nil:
			reply.fail(httpx.Coded(http.StatusNotFound, wire.CodeUnknownTenant, "no tenant %q", name))
			return
		}
		c.commit([]persistence.Command{persistence.DeleteTenant(name)}, func() {
			delete(c.tenants, name)
			c.log.Info("tenant deleted", "tenant", name)
		}, func(err error) { reply(wire.None{}, err) })
	})
}

// tenantsStatus is GET /v1/tenants.
func (c *core) tenantsStatus() (wire.Tenants, error) {
	if !c.leading() {
		return wire.Tenants{}, c.notLeader()
	}
	out := wire.Tenants{Tenants: []wire.TenantStatus{}}
	for _, t := range c.sortedTenants() {
		out.Tenants = append(out.Tenants, wire.TenantStatus{Name: t.Name, Queues: t.Queues, UnixUser: t.UnixUser, CreatedAt: t.CreatedAt, DefaultQueue: t.DefaultQueue})
	}
	return out, nil
}

// tenantOfToken is the tenant a token was made for; 401 for any other
// token. Only the leader answers (a follower redirects there): a
// follower's replica may not have the tenant a token was just made for,
// or may still have one just deleted, and a token must work as soon as it
// is handed out and stop on every master at once when its tenant goes.
func (c *core) tenantOfToken(token string) (string, error) {
	if !c.leading() {
		return "", c.notLeader()
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(token, wire.TenantTokenPrefix), ".")
	t := c.tenants[name]
	if t == nil || subtle.ConstantTimeCompare([]byte(tokenHash(token)), []byte(t.TokenHash)) != 1 {
		return "", httpx.Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "tenant token unknown, or its tenant was deleted")
	}
	return name, nil
}

// placeInQueue names the queue of a submission by tenant (s.Queue: the
// one it names, else queueOfSubmission's, else the default) and checks
// that the tenant may submit there. It is where an admitted record's queue
// is named, once (loadedApp names a record read from the state). A master that does not lead refuses nothing here: the
// submission is refused as this master's (admitKeyed).
func (c *core) placeInQueue(tenant string, s *wire.ProcessSpec) error {
	s.Queue = wire.QueueName(c.queueOfSubmission(tenant, s.Queue))
	if err := c.tenantMaySubmit(tenant, s.Queue); err != nil && c.leading() {
		return err
	}
	return nil
}

// queueOfSubmission is the queue of a submission by tenant that names
// queue: the one named, else the tenant's default queue, else its only
// queue (a tenant of one queue had to name it on every submission, or be
// refused the default queue), else "" (wire.DefaultQueue).
func (c *core) queueOfSubmission(tenant, queue string) string {
	if queue != "" || tenant == "" {
		return queue
	}
	t := c.tenants[tenant]
	switch {
	case t == nil:
		return queue
	case t.DefaultQueue != "":
		return t.DefaultQueue
	case len(t.Queues) == 1:
		return t.Queues[0]
	}
	return queue
}

// tenantMaySubmit checks that tenant (none: an operator) may submit into
// queue (named: placeInQueue), and that the queue exists.
func (c *core) tenantMaySubmit(tenant, queue string) error {
	if c.queues[queue] == nil {
		return httpx.Coded(http.StatusBadRequest, wire.CodeUnknownQueue, "queue: no queue %q", queue)
	}
	if tenant == "" {
		return nil
	}
	t := c.tenants[tenant]
	if t == nil {
		return httpx.Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "tenant %s was deleted", tenant)
	}
	if !slices.Contains(t.Queues, queue) {
		return forbidden("tenant %s may not submit into queue %s (its queues: %s)", tenant, queue, strings.Join(t.Queues, ", "))
	}
	return nil
}

// unixUserOf is the Unix user the processes of tenant run as, if its
// record names one (and the tenant still exists).
func (c *core) unixUserOf(tenant string) string {
	if t := c.tenants[tenant]; t != nil {
		return t.UnixUser
	}
	return ""
}

// tenantHasWork reports whether an active app or driver was submitted by
// (a tenant named) name.
func (c *core) tenantHasWork(name string) bool {
	if c.registering.tenants[name] > 0 {
		return true
	}
	for _, a := range c.appOrder {
		if a.rec.Tenant == name {
			return true
		}
	}
	for _, d := range c.drivers {
		if d.rec.Tenant == name {
			return true
		}
	}
	return false
}

// unixUserRunning names the tenant other than name whose active apps or
// drivers run as Unix user user, or is "". A deleted tenant's work keeps the
// user it was submitted with, so the live tenants alone do not say who
// holds a user.
func (c *core) unixUserRunning(name, user string) string {
	if user == "" {
		return ""
	}
	for _, a := range c.appOrder {
		if a.rec.UnixUser == user && a.rec.Tenant != name {
			return cmp.Or(a.rec.Tenant, "(none)")
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.drivers)) {
		if d := c.drivers[id]; d.rec.UnixUser == user && d.rec.Tenant != name {
			return cmp.Or(d.rec.Tenant, "(none)")
		}
	}
	return ""
}

// unixUserOfSubmitter is the Unix user an app's processes run as: its
// driver's, if a driver registered it (the driver keeps the one it was
// submitted with), else its tenant's now.
func (c *core) unixUserOfSubmitter(idem keyed) string {
	if d := c.drivers[idem.owner]; idem.owner != "" && d != nil {
		return d.rec.UnixUser
	}
	return c.unixUserOf(idem.tenant)
}
