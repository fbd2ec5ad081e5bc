package master

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// The web UI's sessions on the masters (httpx.UISessions): one scope for
// every master of the cluster, so a session survives a failover; a
// sign-out on any master ends it on all of them through the Raft log
// (persistence.EndSession), and every master, follower or leader, refuses
// it from the moment its replica has the entry.

// sessionCookie is the masters' session cookie. Workers name theirs after
// themselves: servers on one host share its cookies.
const sessionCookie = "berth_session"

// newSessions is this master's sessions.
func (m *Master) newSessions() *httpx.UISessions {
	s := httpx.NewUISessions(sessionCookie, m.cfg.Secret, "masters", nil)
	s.Ended = m.sessionEnded
	s.End = m.endSession
	s.TenantToken = m.tenantTokenHash // a tenant's session (uitenant.go)
	return s
}

// sessionEnded reads the replica: a follower refuses an ended session too.
func (m *Master) sessionEnded(ctx context.Context, ref httpx.SessionRef) (bool, error) {
	ended := false
	err := m.engine.Read(ctx, func(s *persistence.State) { ended = s.SessionEnded(ref.Tenant, ref.ID, ref.Expires.Unix()) })
	return ended, err
}

// endSession has the leader write the session's end: this master's loop
// when it leads, else the leader's API, where value proves the right.
func (m *Master) endSession(ctx context.Context, value, id string, expires time.Time) error {
	holder := m.sessions.Holder(value)
	ctx = asSession(audited(ctx, wire.MasterAPI.EndUISession.Endpoint, ""), holder)
	_, err := call(ctx, m, func(c *core, r reply[wire.None]) { c.endSession(id, holder.Tenant, expires, r) })
	var se *httpx.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTemporaryRedirect || se.Leader == "" {
		return err
	}
	_, err = httpx.Call(ctx, m.leaderClient.get(m.cfg, peerWriteTimeout), se.Leader, wire.MasterAPI.EndUISession, wire.EndSession{Session: value})
	return err
}

// serveEndSession ends a session for whoever holds its value.
func (m *Master) serveEndSession(r *http.Request, in wire.EndSession) (wire.None, error) {
	id, expires, err := m.sessions.Parse(in.Session)
	if err != nil {
		return wire.None{}, httpx.Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "not a live session of this cluster's masters")
	}
	holder := m.sessions.Holder(in.Session)
	return call(asSession(r.Context(), holder), m, func(c *core, r reply[wire.None]) { c.endSession(id, holder.Tenant, expires, r) })
}

// asSession makes the session's holder (an operator's session, or a
// tenant's) the principal of ctx's audit entry: the route is open, and
// the session's value is the credential, whichever master the browser
// signed out at (a follower sends the value to the leader, which would
// otherwise record it as anonymous).
func asSession(ctx context.Context, holder httpx.Principal) context.Context {
	if tag := auditOf(ctx); tag != nil {
		tag.principal = holder
	}
	return ctx
}

// endSession writes the end of session id of tenant ("" for an
// operator's), which expires at expires.
func (c *core) endSession(id, tenant string, expires time.Time, reply reply[wire.None]) {
	if !c.leading() {
		reply.fail(c.notLeader())
		return
	}
	end := persistence.EndedSession{ID: id, Expires: expires.Unix(), At: c.clock.Now().Unix(), Holder: tenant}
	c.commit([]persistence.Command{persistence.EndSession(end)}, func() {}, func(err error) { reply(wire.None{}, err) })
}

// peerClient is a kept client of this master to the other masters' API,
// made at its first use: as a master (its certificate), or with the
// secret; timeout bounds each call.
type peerClient struct {
	once   sync.Once
	client *httpx.Client
}

// peerWriteTimeout bounds a write asked of the leader.
const peerWriteTimeout = 5 * time.Second

func (p *peerClient) get(cfg Config, timeout time.Duration) *httpx.Client {
	p.once.Do(func() {
		p.client = httpx.NewClient(cfg.Secret, timeout)
		if cfg.TLS != nil {
			p.client = httpx.NewClient("", timeout).WithTLS(cfg.TLS.ClientConfig(security.RoleMaster))
		}
	})
	return p.client
}
