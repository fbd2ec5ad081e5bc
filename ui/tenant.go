package ui

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// A tenant's session (docs/UI.md): a tenant signs in with its token, on
// the sign-in page's one field, so that the log links Spark's UI gives its
// users open for them. What it opens is what its token opens through the
// API, for people: the pages and logs of its own apps and drivers
// (read-only: no action is offered, and /ui/act is an operator's). The
// routes it may use are declared in wire (AccessTenantUI); each of those
// pages checks here whose app or driver it shows, and answers one of
// another tenant's exactly as one that does not exist, so that a page says
// nothing of others' ids. Every other page is refused with a page that
// says it needs an operator, by the edge (ServeRefusal) and by the page
// itself (operatorOnly).

// tenantOf is the tenant r comes from (its session, or its token), ""
// for an operator.
func tenantOf(r *http.Request) string {
	if p := httpx.PrincipalOf(r.Context()); p.Kind == httpx.KindTenant {
		return p.Name
	}
	return ""
}

// refuser is the master's and the worker's UI handler: httpx.Authorize
// hands it the refusals of the callers it knows, to answer as pages.
type refuser struct {
	http.Handler
	u *server
}

// ServeRefusal is httpx.UIRefuser's: a tenant refused an operator's page
// or action is told, in a page, that it needs an operator; anyone else (a
// driver's credential, another daemon's certificate: no person) gets the
// JSON error as before, and no page, which would carry a form's token.
func (f refuser) ServeRefusal(w http.ResponseWriter, r *http.Request, err error) {
	if tenantOf(r) == "" {
		httpx.WriteErr(w, r, err)
		return
	}
	setSecurityHeaders(w.Header())
	f.u.operatorsOnly(w, r)
}

// tenantFormToken is the CSRF token of a tenant's pages: an HMAC, keyed
// by the operators' token, of the tenant's session (its id; the tenant's
// name for a tenant without one, calling with its token). It opens the
// sign-out only (every other form is an operator's), and says nothing of
// the operators' token.
func (u *server) tenantFormToken(r *http.Request) string {
	of := "tenant " + tenantOf(r)
	if s := u.o.Sessions; s != nil {
		if c, err := r.Cookie(s.Cookie); err == nil {
			if id, _, err := s.Parse(c.Value); err == nil {
				of = "session " + id
			}
		}
	}
	m := hmac.New(sha256.New, []byte(u.csrf))
	m.Write([]byte("berth ui tenant form\x00" + of))
	return hex.EncodeToString(m.Sum(nil))
}

// operatorOnly serves h to operators only: a tenant's session is refused
// here too, whatever the edge let through.
func (u *server) operatorOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if tenantOf(r) != "" {
			u.operatorsOnly(w, r)
			return
		}
		h(w, r)
	}
}

// refusalData is the page of what a tenant may not see.
type refusalData struct {
	Title, Why string
	// Operators: what was refused is an operator's (not an id that is not
	// the tenant's).
	Operators bool
}

// operatorsOnly refuses an operator's page, or action, to a tenant.
func (u *server) operatorsOnly(w http.ResponseWriter, r *http.Request) {
	what := "This page"
	if r.Method == http.MethodPost {
		what = "This action"
	}
	u.render(w, r, http.StatusForbidden, "refused", role{}, refusalData{Title: "For operators only", Operators: true,
		Why: fmt.Sprintf("%s needs an operator: you are signed in as tenant %s.", what, tenantOf(r))})
}

// notTheTenants is the one answer to a tenant about an app or a driver
// that is not its own, or that does not exist; the id repeated as the
// API repeats a value (a megabyte of it came back whole).
func notTheTenants(tenant string, on entity, id string) string {
	return fmt.Sprintf("Tenant %s has no %s %q.", tenant, [...]string{"application", "driver", "worker"}[on], wire.Clip(id, wire.MaxEchoBytes))
}

// refuseNotTheTenants answers a tenant's page of an app or a driver that
// is not its own, or does not exist: the same page for both.
func (u *server) refuseNotTheTenants(w http.ResponseWriter, r *http.Request, on entity, id string) {
	u.render(w, r, http.StatusForbidden, "refused", role{}, refusalData{Title: "Cannot show this", Why: notTheTenants(tenantOf(r), on, id)})
}

// notFound reports whether err is a read's "no such app or driver".
func notFound(err error) bool {
	var se *httpx.StatusError
	return errors.As(err, &se) && se.Status == http.StatusNotFound
}

// owned reports whether the app or driver id is tenant's: false for one
// that is another's or does not exist, alike; an error only when it could
// not be read (a follower, a timeout), which says nothing of the id.
func (u *server) owned(ctx context.Context, tenant string, on entity, id string) (bool, error) {
	var owner string
	var err error
	switch on {
	case entityApp:
		var a *wire.AppStatus
		if a, _, err = u.o.Source.App(ctx, id); err == nil {
			owner = a.Tenant
		}
	case entityDriver:
		var d *wire.DriverStatus
		if d, err = u.o.Source.Driver(ctx, id); err == nil {
			owner = d.Tenant
		}
	default:
		return false, nil
	}
	switch {
	case notFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return owner == tenant, nil
}

// signInTenant checks a tenant's token and, if it is good, starts a
// session of that tenant, bound to its token. A token refused is answered
// as a wrong operator secret is: the sign-in page again, 401, no cookie.
func (u *server) signInTenant(w http.ResponseWriter, r *http.Request, next, token string) {
	ctx, cancel := pageCtx(r)
	defer cancel()
	name, hash, err := u.o.TenantSignIn(ctx, token)
	if err != nil {
		from, status, msg := roleOfErr(err), http.StatusUnauthorized, "That tenant token is unknown, or its tenant was deleted."
		var se *httpx.StatusError
		if from.Follower || !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
			// Not a verdict on the token: only the leader checks one.
			status, msg = http.StatusServiceUnavailable, "The token could not be checked: "+strings.TrimSuffix(err.Error(), ".")+"."
			if from.Follower {
				status, msg = http.StatusOK, "A tenant signs in on the leader's UI: this master does not lead."
			}
		}
		u.render(w, r, status, "signin", from, u.signInData(next, msg))
		return
	}
	u.o.Log.Info("a tenant signed in to the web UI", "tenant", name)
	value, expires := u.o.Sessions.StartTenant(name, hash)
	http.SetCookie(w, &http.Cookie{
		Name: u.o.Sessions.Cookie, Value: value, Path: routes.UIPages.Pattern, Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.o.Secure,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}
