package httpx

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// tenantTokens is what the servers keep of the tenants' tokens, by name.
type tenantTokens map[string]string

func (t tenantTokens) hash(_ context.Context, name string) (string, error) { return t[name], nil }

// A tenant's session is a tenant's while its tenant has the token it was
// started with: deleting the tenant or giving it another token ends it, as
// do its expiry and its sign-out; a value altered in any way, or signed
// with another key, is no session; a server without tenants takes none.
func TestTenantSessionsAreBoundToTheTenantsToken(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tokens := tenantTokens{"acme": "hash-1", "beta": "hash-b"}
	ended := NewEndedSet(clock)
	s := NewUISessions("c", "s3cret", "masters", clock)
	s.Ended, s.End, s.TenantToken = ended.Ended, ended.End, tokens.hash
	ctx := context.Background()

	v, expires := s.StartTenant("acme", "hash-1")
	if !strings.HasPrefix(v, tenantSessionPrefix) || strings.Contains(v, "hash-1") || !expires.Equal(now.Add(UISessionTTL)) {
		t.Fatalf("a tenant's session %q, expiring %v", v, expires)
	}
	p, err := s.Verify(ctx, v)
	if err != nil || p != (Principal{Kind: KindTenant, Name: "acme", Tenant: "acme", Via: ViaSession}) {
		t.Fatalf("a fresh tenant's session: %+v, %v", p, err)
	}
	if p.Audit() != "tenant:acme" {
		t.Errorf("audited as %q", p.Audit())
	}
	if h := s.Holder(v); h.Kind != KindTenant || h.Name != "acme" {
		t.Errorf("holder %+v", h)
	}
	op, _ := s.Start()
	if p, err := s.Verify(ctx, op); err != nil || p.Kind != KindOperator {
		t.Errorf("an operator's session beside it: %+v, %v", p, err)
	}

	enc := base64.RawURLEncoding
	body, sig, _ := strings.Cut(strings.TrimPrefix(v, tenantSessionPrefix), ".")
	payload, _ := enc.DecodeString(body)
	renamed := append(append([]byte{}, payload[:len(payload)-len("acme")]...), "beta"...)
	opBody, opSig, _ := strings.Cut(strings.TrimPrefix(op, sessionPrefix), ".")
	for name, forged := range map[string]string{
		"another tenant's name, the signature kept": tenantSessionPrefix + enc.EncodeToString(renamed) + "." + sig,
		"an operator's value as a tenant's":         tenantSessionPrefix + opBody + "." + opSig,
		"a tenant's value as an operator's":         sessionPrefix + body + "." + sig,
		"a cut signature":                           v[:len(v)-4],
		"no signature":                              tenantSessionPrefix + body,
		"no name":                                   tenantSessionPrefix + enc.EncodeToString(payload[:sessionIDLen+8+tenantBindLen]) + "." + sig,
		"garbage":                                   tenantSessionPrefix + "%%%.***",
		"empty":                                     tenantSessionPrefix,
		"a megabyte":                                tenantSessionPrefix + strings.Repeat("A", 1<<20) + "." + sig,
		"the token itself":                          wire.TenantTokenPrefix + "acme.x",
	} {
		if p, err := s.Verify(ctx, forged); err == nil {
			t.Errorf("%s was taken, as %+v", name, p)
		}
		if h := s.Holder(forged); h.Kind != 0 {
			t.Errorf("%s has a holder: %+v", name, h)
		}
	}
	for name, other := range map[string]*UISessions{
		"another secret": NewUISessions("c", "changed", "masters", clock),
		"a worker's":     NewUISessions("c", "s3cret", "worker w1 x", clock),
	} {
		other.TenantToken = tokens.hash
		if _, err := other.Verify(ctx, v); err == nil {
			t.Errorf("%s took the tenant's session", name)
		}
	}
	// A server without tenants (a worker's) takes no tenant's session,
	// not even one signed with its own key.
	worker := NewUISessions("c", "s3cret", "worker w1 x", clock)
	own, _ := worker.StartTenant("acme", "hash-1")
	if _, err := worker.Verify(ctx, own); err == nil {
		t.Error("a server without tenants took a tenant's session")
	}

	// A new token for the tenant, or its deletion, ends the session; its
	// old token's hash back (a tenant made again) does not end another's.
	tokens["acme"] = "hash-2"
	if _, err := s.Verify(ctx, v); err == nil {
		t.Error("the session outlived its tenant's token")
	}
	delete(tokens, "acme")
	if _, err := s.Verify(ctx, v); err == nil {
		t.Error("the session outlived its tenant")
	}
	tokens["acme"] = "hash-1"
	if _, err := s.Verify(ctx, v); err != nil {
		t.Errorf("the session with its token: %v", err)
	}
	// What the servers keep cannot be read: no session.
	s.TenantToken = func(context.Context, string) (string, error) { return "", errors.New("shutting down") }
	if _, err := s.Verify(ctx, v); err == nil {
		t.Error("a session taken without its tenant checked")
	}
	s.TenantToken = tokens.hash
	if err := s.SignOut(ctx, v); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, v); err == nil {
		t.Error("a signed-out tenant's session is still taken")
	}
	b, _ := s.StartTenant("beta", "hash-b")
	now = now.Add(UISessionTTL)
	if _, err := s.Verify(ctx, b); err == nil {
		t.Error("an expired tenant's session is still taken")
	}
}

// refusalPage is a UI's handler that answers refusals as pages.
type refusalPage struct{ http.Handler }

func (refusalPage) ServeRefusal(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("X-Refused-As", PrincipalOf(r.Context()).Audit())
	http.Error(w, "refused page: "+err.Error(), http.StatusForbidden)
}

// Served through Authorize, a tenant's session opens the UI's routes
// declared for tenants (and the route's scope is not asked: the UI
// answers for whose the app is), and is refused every other page and
// form with the UI's own refusal page; the JSON API never takes it; a
// tenant deleted, or a cookie forged, is no session at all.
func TestAuthorizeScopesTenantSessionsToTheirUIRoutes(t *testing.T) {
	ui := wire.MasterAPI.UI
	mux := http.NewServeMux()
	mux.Handle(wire.MasterAPI.App.Mux(), echoPrincipal)
	h := UIHandler(refusalPage{echoPrincipal}, ui.UISignIn.Pattern)
	for _, e := range wire.Endpoints(ui) {
		mux.Handle(e.Mux(), h)
	}
	tokens := tenantTokens{"acme": "hash-1"}
	sessions := NewUISessions("berth_session", "s3cret", "masters", nil)
	sessions.TenantToken = tokens.hash
	var refused []string
	auth := Auth{Secret: "s3cret", UI: sessions,
		Scope: func(*http.Request, string, Principal) error {
			return Coded(http.StatusForbidden, wire.CodeForbidden, "scope asked")
		},
		Refused: func(r *http.Request, pattern string, p Principal, _ error) {
			refused = append(refused, p.Audit()+" "+pattern)
		}}
	srv := Guard(Authorize(wire.MasterAPI, mux, auth), false)
	do := func(method, path, cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader("csrf=x"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "berth_session", Value: cookie})
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec
	}
	tenant, _ := sessions.StartTenant("acme", "hash-1")
	for _, c := range []struct{ method, path string }{
		{"GET", "/ui/apps/app-1"}, {"GET", "/ui/drivers/driver-1"}, {"GET", "/ui/logs?app=app-1&executor=0&stream=stdout"}, {"POST", "/ui/sign-out"},
	} {
		if rec := do(c.method, c.path, tenant); rec.Code != http.StatusOK || rec.Header().Get("X-Principal") != "tenant" {
			t.Errorf("%s %s with a tenant's session: %d %q %s", c.method, c.path, rec.Code, rec.Header().Get("X-Principal"), rec.Body)
		}
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/ui/"}, {"GET", "/ui/topology"}, {"GET", "/ui/queues"}, {"GET", "/ui/workers/w1"}, {"POST", "/ui/act"}, {"GET", "/ui/logs/x"},
	} {
		rec := do(c.method, c.path, tenant)
		if rec.Code != http.StatusForbidden || rec.Header().Get("X-Refused-As") != "tenant:acme" || !strings.Contains(rec.Body.String(), "a tenant may not call this route") {
			t.Errorf("%s %s with a tenant's session: %d %q %s, want the UI's refusal", c.method, c.path, rec.Code, rec.Header().Get("X-Refused-As"), rec.Body)
		}
	}
	if len(refused) != 6 || refused[4] != "tenant:acme POST /ui/" {
		t.Errorf("refusals heard %q", refused)
	}
	if rec := do("GET", "/v1/apps/app-1", tenant); rec.Code != http.StatusUnauthorized {
		t.Errorf("the JSON API took a tenant's session: %d", rec.Code)
	}
	operator, _ := sessions.Start()
	if rec := do("GET", "/ui/", operator); rec.Code != http.StatusOK || rec.Header().Get("X-Principal") != "operator" {
		t.Errorf("an operator's session on the overview: %d", rec.Code)
	}
	forged := strings.Replace(tenant, tenantSessionPrefix, sessionPrefix, 1)
	delete(tokens, "acme")
	for name, cookie := range map[string]string{"a deleted tenant's": tenant, "a forged": forged} {
		if rec := do("GET", "/ui/logs?app=app-1&executor=0&stream=stdout", cookie); rec.Code != http.StatusSeeOther ||
			!strings.HasPrefix(rec.Header().Get("Location"), "/ui/sign-in?next=") {
			t.Errorf("%s session on a log page: %d %q, want the sign-in", name, rec.Code, rec.Header().Get("Location"))
		}
		if rec := do("POST", "/ui/sign-out", cookie); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s session's sign-out: %d", name, rec.Code)
		}
	}
}
