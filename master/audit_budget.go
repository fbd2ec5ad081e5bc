package master

import (
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// The audit log records every refusal of a known caller, and each one is
// a write through Raft. A caller refused on purpose, in a loop, would
// then write as fast as it can send: 200 refused requests a second is 200
// log entries a second on every master. So what one principal's refusals
// may write is rationed (a token bucket, refusalsBurst then refusalsPerSec):
// a refusal beyond its ration is answered as usual but not recorded, and
// the next entry of that principal says how many went unrecorded
// (AuditEntry.Suppressed), or, if it sends nothing more, an entry of its
// own once its ration allows (flushSuppressedAudit, each tick). Entries
// that go with a write are not rationed: the write is the cost, and the
// caps bound it. Nor are an operator's refusals: an operator may change
// anything, and every refusal of its is recorded. The ration is the
// leader's memory, as the backoff is.

const (
	refusalsPerSec = 2.0
	refusalsBurst  = 20.0
)

// refusalRation is one principal's ration (a tenant's: its own and its
// drivers').
type refusalRation struct {
	tokens     float64
	at         time.Time // when tokens was counted
	suppressed int       // refusals not recorded since its last entry
	tenant     string
}

// refusalRations are the principals' rations, by rationOf.
type refusalRations map[string]*refusalRation

// rationOf names the ration a principal's refusals take from: its
// tenant's, for a tenant and every driver of it alike (each driver with a
// ration of its own let a tenant of 50 drivers write 1,000 entries in an
// instant), else the principal's own (AuditEntry.Principal).
func rationOf(p httpx.Principal) string {
	if p.Tenant != "" {
		return httpx.Principal{Kind: httpx.KindTenant, Name: p.Tenant}.Audit()
	}
	return p.Audit()
}

// refill counts r's tokens at now.
func (r *refusalRation) refill(now time.Time) {
	if d := now.Sub(r.at); d > 0 {
		r.tokens = min(refusalsBurst, r.tokens+d.Seconds()*refusalsPerSec)
	}
	r.at = now
}

// take reports whether a refusal of principal may be recorded now; if
// so, also how many went unrecorded before it (reset to 0).
func (rs refusalRations) take(principal, tenant string, now time.Time) (bool, int) {
	r := rs[principal]
	if r == nil {
		r = &refusalRation{tokens: refusalsBurst, at: now}
		rs[principal] = r
	}
	r.tenant = tenant
	r.refill(now)
	if r.tokens < 1 {
		r.suppressed++
		return false, 0
	}
	r.tokens--
	n := r.suppressed
	r.suppressed = 0
	return true, n
}

// flushSuppressedAudit (from tick) writes, for each principal whose
// refusals went unrecorded and whose ration allows one again, an entry
// that says how many; and forgets the rations that are full again.
func (c *core) flushSuppressedAudit() {
	if !c.leading() || len(c.refusals) == 0 {
		return
	}
	now := c.now()
	var cmds []persistence.Command
	for p, r := range c.refusals {
		r.refill(now)
		switch {
		case r.suppressed > 0 && r.tokens >= 1:
			r.tokens--
			cmds = append(cmds, c.auditEntry(wire.AuditEntry{Principal: p, Tenant: r.tenant, Outcome: wire.AuditNotRecorded, Suppressed: r.suppressed}))
			r.suppressed = 0
		case r.suppressed == 0 && r.tokens >= refusalsBurst:
			delete(c.refusals, p)
		}
	}
	if len(cmds) > 0 {
		c.commit(cmds, func() {}, c.logPersistFailure("audit refusals not recorded"))
	}
}

// What one tenant may change is rationed too, since every change it makes
// is an audit entry on every master and the log keeps the newest 100,000:
// a tenant that set its app's executor limit in a loop pushed every other
// principal's entries out of the log within minutes. So a tenant's writes
// (its own and its drivers', one ration for all of them) take a token of
// a bucket of MaxTenantWritesPerSecond, holding 10 s of them: a write
// beyond is a 429 (limit_reached, naming the flag) that changes nothing,
// and is a refusal, rationed as above. At the default ceiling of 20 a
// second, a tenant needs 83 minutes of writing at it to push 100,000
// entries out, each naming it. An operator's writes are not rationed.
// This is the leader's memory, as the refusals' ration is.

const tenantWriteBurstSeconds = 10

// writeRations are the tenants' buckets, by tenant.
type writeRations map[string]*bucket

// bucket is a token bucket of rate a second, holding burst.
type bucket struct {
	tokens float64
	at     time.Time
}

// take takes a token of tenant's bucket at now, if it has one.
func (rs writeRations) take(tenant string, rate int, now time.Time) bool {
	burst := float64(rate * tenantWriteBurstSeconds)
	b := rs[tenant]
	if b == nil {
		b = &bucket{tokens: burst, at: now}
		rs[tenant] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()*float64(rate))
	}
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// tenantWriteRefused is the 429 of the request being served when it is a
// tenant's change beyond its ration, else nil. Only the request's first
// write, the one its entry goes with, is counted.
func (c *core) tenantWriteRefused() error {
	tag := c.req
	if tag == nil || tag.written || tag.principal.Tenant == "" || tag.principal.Kind == httpx.KindOperator {
		return nil
	}
	rate := c.cfg.MaxTenantWritesPerSecond
	if c.writes.take(tag.principal.Tenant, rate, c.now()) {
		return nil
	}
	return limitReached("--max-tenant-writes-per-second", "tenant %s made more than %d changes a second (%d in a burst): nothing was changed; retry later",
		tag.principal.Tenant, rate, rate*tenantWriteBurstSeconds)
}
