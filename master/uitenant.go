package master

import (
	"context"
	"fmt"

	"github.com/berth-cluster/berth/persistence"
)

// A tenant's session of the web UI (ui/tenant.go, httpx/tenantsession.go):
// a tenant signs in with its token, checked as the API checks it, and its
// session is bound to the token's hash. Every request of the session then
// checks that hash against the tenant's record in this master's replica,
// as every request of a session checks it was not signed out: the session
// ends on each master as it applies the tenant's deletion (or a new token
// for it), as the tenant's token does.

// tenantSignIn is the UI's TenantSignIn: the tenant of token, checked by
// the leader as a tenant's bearer token is (tenantOfToken: a follower
// answers not_leader, with where the leader is), and the token's hash.
func (m *Master) tenantSignIn(ctx context.Context, token string) (name, hash string, err error) {
	name, err = query(ctx, m, func(c *core) (string, error) { return c.tenantOfToken(token) })
	if err != nil {
		return "", "", err
	}
	return name, tokenHash(token), nil
}

// tenantTokenHash is the sessions' TenantToken: the hash of tenant name's
// token in this master's replica, "" if there is no such tenant.
func (m *Master) tenantTokenHash(ctx context.Context, name string) (string, error) {
	hash := ""
	err := m.engine.Read(ctx, func(s *persistence.State) {
		if t := s.Tenants[name]; t != nil {
			hash = t.TokenHash
		}
	})
	if err != nil {
		return "", fmt.Errorf("reading tenant %s: %w", name, err)
	}
	return hash, nil
}
