package master

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// The audit log (docs/QUEUES.md): every state-changing request, with who
// asked, the route, what it named and how it ended. An entry is written in
// the same log entry as the request's first write (Raft applies a batch
// whole), so what is acknowledged is audited and what is audited
// happened. A request refused (a 4xx from an authenticated caller: not
// allowed, not found, a conflict, a cap) writes an entry of its own. Old
// entries go at --audit-retention, and beyond persistence.MaxAuditEntries.

// auditTag is one request's entry in the making; its handler puts it in
// the request's context, the loop's call hands it to the core for the
// request's writes (core.req).
type auditTag struct {
	principal httpx.Principal
	route     string
	target    string
	// refusedTarget names the target of a refusal that has no target
	// (a submission refused before it got an id).
	refusedTarget string
	written       bool // an entry went with one of its writes
}

type auditKey struct{}

// audited returns ctx carrying the audit tag of a request to route on
// target (by the principal Authorize let through).
func audited(ctx context.Context, route wire.Endpoint, target string) context.Context {
	return context.WithValue(ctx, auditKey{}, &auditTag{principal: httpx.PrincipalOf(ctx), route: route.Mux(), target: target})
}

func auditOf(ctx context.Context) *auditTag {
	t, _ := ctx.Value(auditKey{}).(*auditTag)
	return t
}

// auditCommand is the entry of tag with outcome, or (no tag, or its entry
// written already) none. The target defaults to what cmd writes.
func (c *core) auditCommand(tag *auditTag, outcome string, status int, cmd *persistence.Command) (persistence.Command, bool) {
	if tag == nil || tag.written {
		return persistence.Command{}, false
	}
	tag.written = true
	target := tag.target
	if target == "" && cmd != nil {
		target = commandTarget(*cmd)
	}
	p := tag.principal
	return c.auditEntry(wire.AuditEntry{Principal: p.Audit(), Tenant: p.Tenant, Route: tag.route, Target: target, Outcome: outcome, Status: status}), true
}

// auditEntry is the command that writes e, stamped now, each text field
// cut to wire.MaxAuditText (the target is whatever a caller put in the
// path: a megabyte of it was stored whole).
func (c *core) auditEntry(e wire.AuditEntry) persistence.Command {
	e.Time = c.now()
	return persistence.Audit(persistence.AuditRecord{Retain: c.cfg.AuditRetention, Entry: persistence.BoundAuditEntry(e)})
}

// withAudit adds the entry of the request being served, if any, to the
// commands of its first write.
func (c *core) withAudit(cmds []persistence.Command) []persistence.Command {
	if len(cmds) == 0 {
		return cmds
	}
	if a, ok := c.auditCommand(c.req, "ok", http.StatusOK, &cmds[0]); ok {
		return append(cmds, a)
	}
	return cmds
}

// commandTarget names what a command writes.
func commandTarget(cmd persistence.Command) string {
	switch {
	case cmd.App != nil:
		return cmd.App.ID
	case cmd.Driver != nil:
		return cmd.Driver.ID
	case cmd.Worker != nil:
		return cmd.Worker.ID
	case cmd.Executor != nil:
		return cmd.Executor.Key()
	case cmd.Queue != nil:
		return cmd.Queue.Name
	case cmd.Tenant != nil:
		return cmd.Tenant.Name
	}
	return cmd.ID
}

// auditRefusal records a request of ctx that an authenticated caller made
// and that was refused, unless an entry went with a write already. Only a
// refusal is recorded: an answer that changed nothing because this master
// does not lead (a redirect, an election) is the leader's to record.
func (m *Master) auditRefusal(ctx context.Context, err error) {
	tag := auditOf(ctx)
	var se *httpx.StatusError
	if tag == nil || !errors.As(err, &se) || se.Status < 400 || se.Status > 499 || tag.principal.Kind == 0 {
		return
	}
	code := string(se.ErrorCode()) // what the client was answered
	m.post(func(c *core) { c.auditRefused(tag, code, se.Status) })
}

// auditRefused writes the entry of a refused request (tag) within its
// principal's ration (audit_budget.go).
func (c *core) auditRefused(tag *auditTag, code string, status int) {
	if !c.leading() {
		return
	}
	p := tag.principal
	ok, suppressed := true, 0
	if p.Kind != httpx.KindOperator {
		ok, suppressed = c.refusals.take(rationOf(p), p.Tenant, c.now())
	}
	if !ok {
		tag.written = true // over its ration: counted, said with its next entry
		return
	}
	if tag.target == "" {
		tag.target = tag.refusedTarget
	}
	if a, ok := c.auditCommand(tag, code, status, nil); ok {
		a.Audit.Entry.Suppressed = suppressed
		c.commit([]persistence.Command{a}, func() {}, c.logPersistFailure("audit a refused request"))
	}
}

// auditSuccess records a request of ctx that succeeded without a write of
// the state to carry its entry (a Raft membership change, a worker's
// failures cleared): every change is recorded with who asked for it.
func (m *Master) auditSuccess(ctx context.Context) {
	tag := auditOf(ctx)
	if tag == nil || tag.principal.Kind == 0 {
		return
	}
	m.post(func(c *core) { c.auditAlone(tag) })
}

// auditAlone writes tag's entry on its own, as a success, if none went
// with a write.
func (c *core) auditAlone(tag *auditTag) {
	if !c.leading() {
		return
	}
	if a, ok := c.auditCommand(tag, "ok", http.StatusOK, nil); ok {
		c.commit([]persistence.Command{a}, func() {}, c.logPersistFailure("audit a request"))
	}
}

// refused is Authorize's hook: a caller it knew, refused a route that
// changes state (403), is audited.
func (m *Master) refused(r *http.Request, pattern string, p httpx.Principal, err error) {
	if r.Method == http.MethodGet || p.Kind == 0 {
		return
	}
	ctx := httpx.WithPrincipal(r.Context(), p)
	method, path, _ := strings.Cut(pattern, " ")
	m.auditRefusal(audited(ctx, wire.Endpoint{Method: method, Pattern: path}, httpx.PathParam(pattern, r, "id")), err)
}

// auditLog is GET /v1/audit, from this master's replica: ?since=1h keeps
// the entries of the last hour, ?tenant=NAME those of one tenant; at most
// the newest maxAuditAnswer.
func (m *Master) auditLog(r *http.Request, _ wire.None) (wire.Audit, error) {
	q := r.URL.Query()
	var since time.Time
	if s := q.Get(wire.AuditSinceParam); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return wire.Audit{}, badRequest("%s %q: want a positive duration, e.g. 1h", wire.AuditSinceParam, s)
		}
		since = time.Now().Add(-d)
	}
	tenant := q.Get(wire.AuditTenantParam)
	out := wire.Audit{Entries: []wire.AuditEntry{}}
	err := m.engine.Read(r.Context(), func(s *persistence.State) {
		for _, e := range s.Audit {
			if e.Time.Before(since) || tenant != "" && e.Tenant != tenant {
				continue
			}
			out.Entries = append(out.Entries, e)
		}
	})
	if n := len(out.Entries); n > maxAuditAnswer {
		out.Entries = out.Entries[n-maxAuditAnswer:]
	}
	return out, err
}

// maxAuditAnswer bounds one answer of GET /v1/audit.
const maxAuditAnswer = 10_000
