package master

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// authorize puts the master's routes behind their declared access
// (wire.Access): who may call is decided at the edge, once; which app or
// driver a driver or a tenant may touch and which worker id a worker
// certificate may speak for are decided here, from the committed state.
func (m *Master) authorize(mux *http.ServeMux) http.Handler {
	return httpx.Authorize(wire.MasterAPI, mux, httpx.Auth{
		Secret:  m.cfg.Secret,
		TLS:     m.cfg.TLS != nil,
		Bearer:  m.bearer,
		Scope:   m.scope,
		UI:      m.sessions,
		Refused: m.refused,
	})
}

// bearer resolves a credential the master made, a driver's or a
// tenant's: the leader checks it (a follower redirects there), as the
// leader alone knows the newest of each.
func (m *Master) bearer(ctx context.Context, token string) (httpx.Principal, error) {
	if strings.HasPrefix(token, wire.TenantTokenPrefix) {
		name, err := query(ctx, m, func(c *core) (string, error) { return c.tenantOfToken(token) })
		return httpx.Principal{Kind: httpx.KindTenant, Name: name, Tenant: name}, err
	}
	type driver struct{ id, tenant string }
	d, err := query(ctx, m, func(c *core) (driver, error) {
		id, err := c.driverOfToken(token)
		if err != nil {
			return driver{}, err
		}
		return driver{id, c.drivers[id].rec.Tenant}, nil
	})
	return httpx.Principal{Kind: httpx.KindDriver, Name: d.id, Tenant: d.tenant}, err
}

// accessOf is each route's declared access, by its mux pattern.
var accessOf = func() map[string]wire.Access {
	out := map[string]wire.Access{}
	for _, e := range wire.Endpoints(wire.MasterAPI) {
		out[e.Mux()] = e.Access
	}
	return out
}()

// scope lets a worker certificate speak only for the worker id it is named
// (the registration's id is checked by its handler), a driver touch only
// the apps it registered, and a tenant only its own apps (the routes open
// to drivers, wire.AccessApp) and drivers (those open to tenants).
func (m *Master) scope(r *http.Request, pattern string, p httpx.Principal) error {
	id := httpx.PathParam(pattern, r, "id")
	if id == "" {
		return nil
	}
	switch p.Kind {
	case httpx.KindWorker:
		if id != p.Name {
			return forbidden("the certificate of worker %q may not speak for worker %q", p.Name, id)
		}
		return nil
	case httpx.KindDriver, httpx.KindTenant:
		onApp := accessOf[pattern] == wire.AccessApp
		_, err := query(r.Context(), m, func(c *core) (wire.None, error) {
			if !c.leading() {
				return wire.None{}, c.notLeader()
			}
			// What is not listed is left to the handler (404).
			switch a, d := c.findApp(id), c.findDriver(id); {
			case onApp && a != nil && p.Kind == httpx.KindDriver && a.rec.Owner != p.Name:
				return wire.None{}, forbidden("driver %s did not register app %s", p.Name, id)
			case onApp && a != nil && p.Kind == httpx.KindTenant && a.rec.Tenant != p.Name:
				return wire.None{}, forbidden("app %s is not tenant %s's", id, p.Name)
			case !onApp && d != nil && d.rec.Tenant != p.Name:
				return wire.None{}, forbidden("driver %s is not tenant %s's", id, p.Name)
			}
			return wire.None{}, nil
		})
		return err
	}
	return nil
}

func forbidden(format string, args ...any) error {
	return httpx.Coded(http.StatusForbidden, wire.CodeForbidden, format, args...)
}

// ownerOf is the driver a request comes from ("" for anyone else): the
// app it registers is that driver's; tenantOf the tenant it acts for.
func ownerOf(r *http.Request) string {
	if p := httpx.PrincipalOf(r.Context()); p.Kind == httpx.KindDriver {
		return p.Name
	}
	return ""
}

func tenantOf(r *http.Request) string { return httpx.PrincipalOf(r.Context()).Tenant }

// mintDriverToken makes the credential of one launch of driver id:
// drv1.<id>.<random>. Only its hash is written (DriverRecord.CredentialHash),
// so any later leader can check it and nobody can read it back.
func mintDriverToken(id string) (token, hash string) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	token = wire.DriverTokenPrefix + id + "." + base64.RawURLEncoding.EncodeToString(b[:])
	return token, tokenHash(token)
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// driverOfToken is the driver a credential was minted for, while that
// launch of it is active; 401 otherwise.
func (c *core) driverOfToken(token string) (string, error) {
	if !c.leading() {
		return "", c.notLeader()
	}
	rest := strings.TrimPrefix(token, wire.DriverTokenPrefix)
	id, _, _ := strings.Cut(rest, ".")
	d := c.drivers[id]
	if d != nil && d.rec.CredentialHash != "" &&
		subtle.ConstantTimeCompare([]byte(tokenHash(token)), []byte(d.rec.CredentialHash)) == 1 {
		return id, nil
	}
	return "", httpx.Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "driver credential unknown or no longer valid")
}
