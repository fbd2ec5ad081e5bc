package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configure the master's UI.
type Options struct {
	Source Source
	// Secret is the operator secret the sign-in page checks ("" for none:
	// then only a cli certificate, or the loopback mode, signs in).
	Secret string
	// Sessions are the server's UI sessions (nil: no sign-in by secret).
	Sessions *httpx.UISessions
	// Secure marks the session cookie Secure (the server is TLS).
	Secure bool
	// SignInNeeded: the server has credentials, so pages need a session
	// or a client certificate (false in the loopback dev mode).
	SignInNeeded bool
	Log          *slog.Logger
	// SignInCode, when set, spends a one-time sign-in code (berth ui,
	// signinlink.go): true if it was good, and a session starts.
	SignInCode func(code string) bool
	// TenantSignIn, when set, lets a tenant sign in with its token
	// (tenant.go): it checks the token as the API checks a tenant's and
	// returns the tenant's name and the token's hash as the servers keep
	// it (the session is bound to it), or why not.
	TenantSignIn func(ctx context.Context, token string) (name, tokenHash string, err error)
}

// routes are the UI's routes as wire declares them: the same on master
// and worker (wire.MasterAPI.UI, wire.WorkerAPI.UI). The pages under
// UIPages are the UI's own.
var routes = wire.MasterAPI.UI

// Mount registers h, a UI's handler (Handler, WorkerHandler), on mux at
// the UI's routes (api), registered as the UI's (httpx.UIHandler: the
// sign-in cookie, and a browser without a session sent to the sign-in
// page); "/" goes to the pages. mux is then served through
// httpx.Authorize with Auth.UI set, behind the browser guard.
func Mount(mux *http.ServeMux, api wire.UI, h http.Handler) {
	mux.HandleFunc(api.UIRoot.Mux(), func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, api.UIPages.Pattern, http.StatusSeeOther)
	})
	h = httpx.UIHandler(h, api.UISignIn.Pattern)
	for _, e := range []wire.Endpoint{api.UIPages.Endpoint, api.UIActions.Endpoint, api.UISignIn.Endpoint, api.UISignInForm.Endpoint, api.UIStatic.Endpoint,
		api.UIApp.Endpoint, api.UIDriver.Endpoint, api.UILogs.Endpoint, api.UISignOut.Endpoint} {
		mux.Handle(e.Mux(), h)
	}
}

// Handler serves the master's UI (see Mount). The pages a tenant may
// open are the ones wire declares for tenants (AccessTenantUI), and they
// check whose app or driver they show; every other page and the forms
// are an operator's, at the edge (wire) and here again.
func Handler(o Options) http.Handler {
	u := &server{o: o, pages: parse(), csrf: newCSRF()}
	mux := u.common()
	mux.HandleFunc("GET /ui/{$}", u.operatorOnly(u.overview))
	mux.HandleFunc("GET /ui/topology", u.operatorOnly(u.topology))
	mux.HandleFunc("GET /ui/queues", u.operatorOnly(u.queues))
	mux.HandleFunc("GET /ui/workers/{id}", u.operatorOnly(u.worker))
	mux.HandleFunc(routes.UIApp.Mux(), u.app)
	mux.HandleFunc(routes.UIDriver.Mux(), u.driver)
	mux.HandleFunc(routes.UILogs.Mux(), u.logs)
	mux.HandleFunc("POST /ui/act", u.operatorOnly(u.act))
	return refuser{securityHeaders(mux), u}
}

// common is the mux of what master and worker UIs share: the assets and
// the sign-in.
func (u *server) common() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle(routes.UIStatic.Mux(), http.StripPrefix(routes.UIStatic.Pattern, cacheFor(time.Hour, http.FileServerFS(static))))
	mux.HandleFunc(routes.UISignIn.Mux(), u.signInPage)
	mux.HandleFunc(routes.UISignInForm.Mux(), u.signIn)
	mux.HandleFunc(routes.UISignOut.Mux(), u.signOut)
	return mux
}

type server struct {
	o     Options
	pages map[string]*template.Template
	csrf  string
}

// newCSRF is this process's form token: every form of its pages carries
// it, and a post without it is refused. A page of another site cannot read
// it (same-origin policy), so it cannot forge a form that carries it.
func newCSRF() string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Errorf("ui: no randomness for the CSRF key: %w", err))
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("berth ui form"))
	return hex.EncodeToString(m.Sum(nil))
}

func (u *server) checkCSRF(r *http.Request) bool {
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(u.formToken(r)))
}

// formToken is the CSRF token of r's pages' forms: the process's, for an
// operator; for a tenant, whose pages carry a form too (the sign-out),
// one of its own session, so that no tenant learns the token of the
// operators' forms (tenantFormToken).
func (u *server) formToken(r *http.Request) string {
	if tenantOf(r) != "" {
		return u.tenantFormToken(r)
	}
	return u.csrf
}

// securityHeaders keeps the pages out of frames (clickjacking) and
// limits what they may load to themselves.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		h.ServeHTTP(w, r)
	})
}

func setSecurityHeaders(h http.Header) {
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Content-Type-Options", "nosniff")
}

func cacheFor(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age="+strconv.Itoa(int(d.Seconds())))
		h.ServeHTTP(w, r)
	})
}

// render writes page with data inside the layout, for r's caller; from
// says whose view it is.
func (u *server) render(w http.ResponseWriter, r *http.Request, status int, page string, from role, data any) {
	t, ok := u.pages[page]
	if !ok {
		http.Error(w, "no page "+page, http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	v := view{Page: page, CSRF: u.formToken(r), SignedIn: u.o.SignInNeeded, Role: from, Tenant: tenantOf(r), Data: data}
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		u.o.Log.Error("ui: rendering", "page", page, "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// view is what every page's template gets.
type view struct {
	Page     string
	CSRF     string
	SignedIn bool // a sign-out button makes sense
	Role     role // a follower's page says so and links to the leader
	// Tenant is the tenant whose session the page is for ("" for an
	// operator): it offers no action, and no link to an operator's page.
	Tenant string
	Data   any
}

// role is whose view a page shows: a follower's (its replica of the
// durable state, or nothing but the leader's address) or the leader's.
type role struct {
	Follower bool
	Leader   string // the leader's API address, "" if none is known
}

// roleOf is the role of a page made from c (nil: none read).
func roleOf(c *wire.ClusterStatus) role {
	if c != nil && c.View == wire.ViewFollower {
		return role{Follower: true, Leader: c.Leader}
	}
	return role{}
}

// roleOfErr is the role of a page whose read or action err answered: a
// master that does not lead says so (and where the leader is).
func roleOfErr(err error) role {
	var se *httpx.StatusError
	if errors.As(err, &se) && (se.Code == wire.CodeNotLeader || se.Code == wire.CodeNoLeader) {
		return role{Follower: true, Leader: se.Leader}
	}
	return role{}
}

// fail renders an error page with err's message and status, as a
// follower's page if from or err says this master does not lead.
func (u *server) fail(w http.ResponseWriter, r *http.Request, from role, err error) {
	if !from.Follower {
		from = roleOfErr(err)
	}
	status := http.StatusBadGateway
	var se *httpx.StatusError
	if errors.As(err, &se) {
		status = se.Status
		if status == http.StatusTemporaryRedirect {
			status = http.StatusOK // shown as a page that links to the leader
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		status = http.StatusGatewayTimeout
	}
	u.render(w, r, status, "error", from, err.Error())
}

// unknown is the error of an id this master does not list.
func unknown(code wire.ErrorCode, kind, id string) error {
	return httpx.Coded(http.StatusNotFound, code, "unknown %s %q", kind, id)
}

// ctx bounds a page's reads: a page must answer even when the loop is busy.
func pageCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 5*time.Second)
}
