package httpx

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// Kind is who a caller is, once authenticated.
type Kind uint8

const (
	KindOperator Kind = iota + 1 // cli certificate, the operator secret, or the loopback mode
	KindMaster                   // master certificate
	KindWorker                   // worker certificate
	KindDriver                   // a driver's credential, minted by the master
	KindTenant                   // a tenant's token
)

func (k Kind) String() string {
	switch k {
	case KindOperator:
		return "operator"
	case KindMaster:
		return "master"
	case KindWorker:
		return "worker"
	case KindDriver:
		return "driver"
	case KindTenant:
		return "tenant"
	}
	return "anonymous"
}

// Principal is an authenticated caller: its kind and, for a certificate,
// its name (the certificate's CN), for a driver the driver's id, for a
// tenant the tenant's name. Tenant is the tenant it acts for, if any (a
// tenant itself, or a driver a tenant submitted).
type Principal struct {
	Kind   Kind
	Name   string
	Tenant string
	// Via says how an operator proved itself: ViaSecret, ViaSession or
	// ViaLoopback ("" for a certificate or a token); for a tenant,
	// ViaSession when it holds a UI session rather than its token.
	Via string
}

// How an operator without a certificate proved itself.
const (
	ViaSecret   = "secret"
	ViaSession  = "ui-session"
	ViaLoopback = "loopback"
)

// Audit names the principal as the audit log shows it: "cli:NAME",
// "secret", "ui-session", "loopback", "tenant:NAME", "driver:ID",
// "worker:ID" or "master:ID".
func (p Principal) Audit() string {
	switch {
	case p.Kind == KindOperator && p.Via != "":
		return p.Via
	case p.Kind == KindOperator:
		return "cli:" + p.Name
	case p.Kind == 0:
		return "anonymous"
	}
	return p.Kind.String() + ":" + p.Name
}

type principalKey struct{}

// PrincipalOf returns the caller that Authorize let through (the zero
// Principal for an open route).
func PrincipalOf(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// WithPrincipal returns ctx carrying p, for handlers under test.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// Auth is how a server tells callers apart.
type Auth struct {
	// Secret is the operator secret ("" for none).
	Secret string
	// TLS: the server is TLS and verifies client certificates against the
	// cluster's CA; a verified certificate's role makes its principal.
	TLS bool
	// Bearer resolves a credential the master made (a driver's,
	// wire.DriverTokenPrefix..., or a tenant's, wire.TenantTokenPrefix...)
	// to its principal; nil on servers that make none (workers).
	Bearer func(ctx context.Context, token string) (Principal, error)
	// Scope checks a driver's or a worker's access to the route's entity
	// (see PathParam) once the route's Access admits its kind; nil admits.
	// It is not asked on wire.AccessTenantUI routes: their handler, the
	// UI, checks whose the entity is, and answers one that is not the
	// caller's as one that does not exist.
	Scope func(r *http.Request, pattern string, p Principal) error
	// UI, when set, is the sessions of this server's web UI. On the
	// handlers registered as the UI's (UIHandler), and on no other, a live
	// session's cookie is then an operator's credential (or a tenant's,
	// for a tenant's session), and a browser that has no credential is
	// sent to the UI's sign-in page instead of answered 401.
	UI *UISessions
	// Refused, when set, hears of each request of a known caller that its
	// route's access or scope refused (for the audit log).
	Refused func(r *http.Request, pattern string, p Principal, err error)
}

// UIHandler registers h as a web UI's handler (its pages, forms, sign-in
// and assets): Authorize takes the UI's session cookie on it, and sends a
// browser without a credential to signIn (the path of the UI's sign-in
// page, as wire declares it). Which requests get the UI's treatment is
// decided by what serves them, never by their path.
func UIHandler(h http.Handler, signIn string) http.Handler { return uiHandler{h, signIn} }

type uiHandler struct {
	http.Handler
	signIn string
}

// UIRefuser is a UI's handler that answers a refusal as a page: on it,
// Authorize hands it the refusal of a caller it knows (a tenant's session
// on an operator's page, 403) instead of writing the JSON error. It must
// serve nothing but that answer.
type UIRefuser interface {
	http.Handler
	ServeRefusal(w http.ResponseWriter, r *http.Request, err error)
}

// loopbackMode: no credential of any kind is configured, so the server is
// bound to loopback (CheckBind) and everyone who reaches it is an operator.
func (a Auth) loopbackMode() bool { return a.Secret == "" && !a.TLS }

// Authorize serves mux's routes to the callers their declaration (api, a
// wire.MasterAPI or wire.WorkerAPI table) admits: 401 for a caller with no
// valid credential, 403 for one whose kind or scope is not admitted. A
// request that matches no declared route is left to mux (404, 405).
func Authorize(api any, mux *http.ServeMux, a Auth) http.Handler {
	access := map[string]wire.Access{}
	for _, e := range wire.Endpoints(api) {
		access[e.Mux()] = e.Access
	}
	var want [sha256.Size]byte
	if a.Secret != "" {
		want = sha256.Sum256([]byte(a.Secret))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		acc, declared := access[pattern]
		if !declared || acc == wire.AccessOpen {
			mux.ServeHTTP(w, r)
			return
		}
		ui, isUI := h.(uiHandler)
		isUI = isUI && a.UI != nil
		p, err := a.authenticate(r, want, isUI)
		if err != nil && isUI && r.Method == http.MethodGet {
			next := ""
			if uri := r.URL.RequestURI(); len(uri) <= MaxEchoedURI {
				next = "?next=" + url.QueryEscape(uri)
			}
			http.Redirect(w, r, ui.signIn+next, http.StatusSeeOther)
			return
		}
		if err == nil {
			err = admit(acc, p)
			scoped := p.Kind == KindDriver || p.Kind == KindWorker || p.Kind == KindTenant
			if err == nil && a.Scope != nil && scoped && acc != wire.AccessTenantUI {
				err = a.Scope(r, pattern, p)
			}
			if err != nil && a.Refused != nil {
				a.Refused(r, pattern, p, err)
			}
			if rf, ok := ui.Handler.(UIRefuser); err != nil && isUI && ok {
				// A person is refused: a page that says why, not JSON.
				rf.ServeRefusal(w, r.WithContext(WithPrincipal(r.Context(), p)), err)
				return
			}
		}
		if err != nil {
			WriteErr(w, r, err)
			return
		}
		mux.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// authenticate finds who is calling: a verified client certificate first,
// then a bearer credential, then the loopback mode, then (for a UI's
// handler) the UI's session cookie.
func (a Auth) authenticate(r *http.Request, want [sha256.Size]byte, ui bool) (Principal, error) {
	if a.TLS {
		if id, ok := security.PeerIdentity(r.TLS); ok {
			switch id.Role {
			case security.RoleCLI:
				return Principal{Kind: KindOperator, Name: id.Name}, nil
			case security.RoleMaster:
				return Principal{Kind: KindMaster, Name: id.Name}, nil
			case security.RoleWorker:
				return Principal{Kind: KindWorker, Name: id.Name}, nil
			}
		}
	}
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token != "" {
		if (strings.HasPrefix(token, wire.DriverTokenPrefix) || strings.HasPrefix(token, wire.TenantTokenPrefix)) && a.Bearer != nil {
			return a.Bearer(r.Context(), token)
		}
		if a.Secret != "" {
			got := sha256.Sum256([]byte(token))
			if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
				return Principal{Kind: KindOperator, Via: ViaSecret}, nil
			}
		}
		return Principal{}, Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "wrong credential")
	}
	if a.loopbackMode() {
		return Principal{Kind: KindOperator, Via: ViaLoopback}, nil
	}
	if ui {
		if p, ok := a.UI.authenticate(r); ok {
			return p, nil
		}
	}
	return Principal{}, Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "no credential: give a client certificate of the cluster's CA (--tls-cert-file) or the secret (--secret-file)")
}

// admit checks a principal's kind against a route's access.
func admit(acc wire.Access, p Principal) error {
	ok := p.Kind == KindOperator
	switch acc {
	case wire.AccessApp:
		ok = ok || p.Kind == KindDriver || p.Kind == KindTenant
	case wire.AccessTenant, wire.AccessTenantUI:
		ok = ok || p.Kind == KindTenant
	case wire.AccessWorker:
		ok = ok || p.Kind == KindWorker
	case wire.AccessMaster:
		ok = ok || p.Kind == KindMaster
	}
	if !ok {
		return Coded(http.StatusForbidden, wire.CodeForbidden, "a %s may not call this route (allowed: %s)", p.Kind, acc)
	}
	return nil
}

// PathParam is the value of the path parameter {name} of pattern (a mux
// pattern such as "GET /v1/apps/{id}") in r's path, "" if the pattern has
// none. Authorize runs before the mux fills r.PathValue.
func PathParam(pattern string, r *http.Request, name string) string {
	_, pat, _ := strings.Cut(pattern, " ")
	want := strings.Split(pat, "/")
	got := strings.Split(r.URL.EscapedPath(), "/")
	if len(want) != len(got) {
		return ""
	}
	for i, seg := range want {
		if seg == "{"+name+"}" {
			v, err := url.PathUnescape(got[i])
			if err != nil {
				return ""
			}
			return v
		}
	}
	return ""
}
