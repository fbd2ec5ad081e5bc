package ui

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

const (
	ownApp, othersApp = "app-20261124120000-0000", "app-20261124120000-0001"
	acmeToken         = wire.TenantTokenPrefix + "acme.good"
)

// tenantUI is the master's UI as a master serves it (mounted, behind the
// API's authorization and the browser guard), with tenants: acme (token
// acmeToken) owns app 0 and driver-1, beta app 1 and driver-2.
type tenantUI struct {
	t      *testing.T
	f      *fakeSource
	h      http.Handler
	tokens map[string]string // tenant → its token's hash, as the masters keep it
	ended  *httpx.EndedSet
}

func newTenantUI(t *testing.T) *tenantUI {
	c := cluster(2, 2)
	c.ActiveApps[0].Tenant, c.ActiveApps[1].Tenant = "acme", "beta"
	c.ActiveDrivers = []wire.DriverStatus{
		{ID: "driver-1", Tenant: "acme", State: wire.DriverRunning, Cores: 1, Command: []string{"pi"}, WorkerID: "w00000", SubmittedAt: t0},
		{ID: "driver-2", Tenant: "beta", State: wire.DriverRunning, Cores: 1, Command: []string{"etl"}, WorkerID: "w00001", SubmittedAt: t0}}
	u := &tenantUI{t: t, f: &fakeSource{c: c, logText: "hello from acme's executor\n"}, tokens: map[string]string{"acme": "hash-acme", "beta": "hash-beta"},
		ended: httpx.NewEndedSet(nil)}
	sessions := httpx.NewUISessions("berth_session", "s3cret", "masters", nil)
	sessions.Ended, sessions.End = u.ended.Ended, u.ended.End
	sessions.TenantToken = func(_ context.Context, name string) (string, error) { return u.tokens[name], nil }
	signIn := func(_ context.Context, token string) (string, string, error) {
		if token == acmeToken && u.tokens["acme"] == "hash-acme" {
			return "acme", "hash-acme", nil
		}
		if u.f.notLeader != nil {
			return "", "", u.f.notLeader
		}
		return "", "", httpx.Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "tenant token unknown, or its tenant was deleted")
	}
	mux := http.NewServeMux()
	Mount(mux, wire.MasterAPI.UI, Handler(Options{Source: u.f, Secret: "s3cret", Sessions: sessions, SignInNeeded: true, Log: discard(), TenantSignIn: signIn}))
	u.h = httpx.Guard(httpx.Authorize(wire.MasterAPI, mux, httpx.Auth{Secret: "s3cret", UI: sessions}), false)
	return u
}

// do sends a request as a browser with cookie (a form for a POST).
func (u *tenantUI) do(method, path, cookie string, form url.Values) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
	req.Host = "example.com"
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "berth_session", Value: cookie})
	}
	rec := httptest.NewRecorder()
	u.h.ServeHTTP(rec, req)
	return rec
}

// signIn signs in on the sign-in page with token, back to next: the
// session's cookie.
func (u *tenantUI) signIn(token, next string) string {
	u.t.Helper()
	rec := u.do(http.MethodPost, "/ui/sign-in", "", url.Values{"token": {token}, "next": {next}})
	cs := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != next || len(cs) != 1 {
		u.t.Fatalf("signing in with %q: %d %q %v %s", token, rec.Code, rec.Header().Get("Location"), cs, rec.Body)
	}
	return cs[0].Value
}

func logOf(app string) string { return "/ui/logs?app=" + app + "&executor=0&stream=stdout" }

// A tenant signs in with its token on the operators' sign-in page, and
// its session opens its own apps' and drivers' log pages and pages,
// read-only; another tenant's are answered exactly as ids that do not
// exist (403); every other page, and every action, needs an operator.
func TestUITenantSessionSeesItsOwnOnly(t *testing.T) {
	u := newTenantUI(t)
	rec := u.do(http.MethodGet, "/ui/sign-in", "", nil)
	contains(t, "the sign-in page", rec.Body.String(), "Operator secret, or your tenant token", "A tenant signs in with its token")
	for _, bad := range []string{wire.TenantTokenPrefix + "acme.wrong", wire.TenantTokenPrefix + "nobody.x", "nope", ""} {
		rec := u.do(http.MethodPost, "/ui/sign-in", "", url.Values{"token": {bad}})
		if rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 || !strings.Contains(rec.Body.String(), `name="token"`) {
			t.Errorf("signing in with %q: %d, cookies %v", bad, rec.Code, rec.Result().Cookies())
		}
	}
	cookie := u.signIn(acmeToken, logOf(ownApp))
	if strings.Contains(cookie, "good") || strings.Contains(cookie, "hash-acme") {
		t.Errorf("the session's cookie %q holds the token or its hash", cookie)
	}

	rec = u.do(http.MethodGet, logOf(ownApp), cookie, nil)
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("its own executor's log: %d %s", rec.Code, body)
	}
	contains(t, "its own log page", body, "hello from acme&#39;s executor", ownApp+" executor 0: stdout", "signed in as tenant <b>acme</b>", "Sign out")
	for _, link := range []string{`href="/ui/topology"`, `href="/ui/queues"`, `<a class="brand"`} {
		if strings.Contains(body, link) {
			t.Errorf("a tenant's page links to an operator's: %s", link)
		}
	}
	if rec := u.do(http.MethodGet, logOf(ownApp)+"&raw=1", cookie, nil); rec.Code != http.StatusOK || rec.Body.String() != u.f.logText {
		t.Errorf("its own raw log: %d %q", rec.Code, rec.Body)
	}
	if rec := u.do(http.MethodGet, "/ui/logs?driver=driver-1&stream=stderr", cookie, nil); rec.Code != http.StatusOK {
		t.Errorf("its own driver's log: %d", rec.Code)
	}

	// Another tenant's, or none: one answer, but for the id.
	for _, c := range []struct{ others, none, what string }{
		{logOf(othersApp), logOf("app-nope"), "an executor's log"},
		{logOf(othersApp) + "&raw=1", logOf("app-nope") + "&raw=1", "a raw log"},
		{"/ui/logs?driver=driver-2&stream=stdout", "/ui/logs?driver=driver-nope&stream=stdout", "a driver's log"},
		{"/ui/apps/" + othersApp, "/ui/apps/app-nope", "an app's page"},
		{"/ui/drivers/driver-2", "/ui/drivers/driver-nope", "a driver's page"},
	} {
		others, none := u.do(http.MethodGet, c.others, cookie, nil), u.do(http.MethodGet, c.none, cookie, nil)
		if others.Code != http.StatusForbidden || none.Code != http.StatusForbidden {
			t.Errorf("%s of another tenant's: %d, of none: %d; want 403 for both", c.what, others.Code, none.Code)
		}
		anon := func(s string) string {
			for _, id := range []string{othersApp, "app-nope", "driver-2", "driver-nope"} {
				s = strings.ReplaceAll(s, id, "ID")
			}
			return s
		}
		if a, b := anon(others.Body.String()), anon(none.Body.String()); a != b || !strings.Contains(a, `Tenant acme has no `) {
			t.Errorf("%s: another tenant's is answered\n%s\nnone is answered\n%s", c.what, a, b)
		}
		if strings.Contains(others.Body.String(), "beta") || strings.Contains(others.Body.String(), "etl") {
			t.Errorf("%s of another tenant's shows what is theirs", c.what)
		}
	}

	// Its own pages, read-only: no action, no link to an operator's page.
	for path, wants := range map[string][]string{
		"/ui/apps/" + ownApp:   {ownApp, "RUNNING", "stdout", "w00000", "queue default"},
		"/ui/drivers/driver-1": {"Driver driver-1", "RUNNING", "w00000", "stderr"},
	} {
		rec := u.do(http.MethodGet, path, cookie, nil)
		body := rec.Body.String()
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, body)
		}
		contains(t, path, body, wants...)
		for _, no := range []string{`action="/ui/act"`, "Kill", `href="/ui/workers/`, `href="/ui/queues`} {
			if strings.Contains(body, no) {
				t.Errorf("%s offers a tenant %s", path, no)
			}
		}
	}

	// The operators' pages and actions say they need an operator.
	token := csrfField.FindStringSubmatch(body)
	if token == nil {
		t.Fatal("no CSRF token on the tenant's page")
	}
	for _, path := range []string{"/ui/", "/ui/topology", "/ui/queues", "/ui/workers/w00000"} {
		rec := u.do(http.MethodGet, path, cookie, nil)
		if rec.Code != http.StatusForbidden {
			t.Errorf("%s with a tenant's session: %d", path, rec.Code)
		}
		contains(t, path+" refused", rec.Body.String(), "For operators only", "This page needs an operator: you are signed in as tenant acme.", "sign in with the operator secret")
		if strings.Contains(rec.Body.String(), "w00001") || strings.Contains(rec.Body.String(), othersApp) {
			t.Errorf("%s refused shows the cluster", path)
		}
	}
	for _, form := range []url.Values{
		{"kind": {"kill-app"}, "id": {ownApp}, "csrf": {token[1]}, "confirm": {"yes"}},
		{"kind": {"kill-app"}, "id": {ownApp}, "csrf": {token[1]}},
		{"kind": {"decommission"}, "id": {"w00000"}, "csrf": {token[1]}, "confirm": {"yes"}},
		{"kind": {"set-limit"}, "id": {ownApp}, "limit": {"9"}, "csrf": {token[1]}, "confirm": {"yes"}},
	} {
		rec := u.do(http.MethodPost, "/ui/act", cookie, form)
		if rec.Code != http.StatusForbidden {
			t.Errorf("%s by a tenant: %d", form.Get("kind"), rec.Code)
		}
		contains(t, form.Get("kind")+" refused", rec.Body.String(), "This action needs an operator: you are signed in as tenant acme.")
	}
	if len(u.f.acted) != 0 {
		t.Fatalf("a tenant acted: %+v", u.f.acted)
	}

	// It signs out: the session ends, its cookie no longer opens a page.
	if rec := u.do(http.MethodPost, "/ui/sign-out", cookie, url.Values{"csrf": {token[1]}}); rec.Code != http.StatusSeeOther {
		t.Errorf("the tenant's sign-out: %d %s", rec.Code, rec.Body)
	}
	if rec := u.do(http.MethodGet, logOf(ownApp), cookie, nil); rec.Code != http.StatusSeeOther {
		t.Errorf("its log page after the sign-out: %d", rec.Code)
	}

	// An operator's session is as it was: every page, every action.
	op := u.signIn("s3cret", "/ui/")
	if rec := u.do(http.MethodGet, "/ui/apps/"+othersApp, op, nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Kill application") {
		t.Errorf("an operator's app page: %d", rec.Code)
	}
	rec = u.do(http.MethodGet, "/ui/", op, nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `href="/ui/topology"`) {
		t.Errorf("an operator's overview: %d", rec.Code)
	}
	// The tenant's pages never carried the operators' forms' token.
	opToken := csrfField.FindStringSubmatch(rec.Body.String())
	if opToken == nil || opToken[1] == token[1] {
		t.Fatalf("the operator's token %v is the tenant's %q", opToken, token[1])
	}
	kill := url.Values{"kind": {"kill-app"}, "id": {othersApp}, "csrf": {token[1]}, "confirm": {"yes"}}
	if rec := u.do(http.MethodPost, "/ui/act", op, kill); rec.Code != http.StatusForbidden || len(u.f.acted) != 0 {
		t.Errorf("an operator's kill with the tenant's token: %d, acted %+v", rec.Code, u.f.acted)
	}
	kill.Set("csrf", opToken[1])
	if rec := u.do(http.MethodPost, "/ui/act", op, kill); rec.Code != http.StatusSeeOther || len(u.f.acted) != 1 {
		t.Errorf("an operator's kill: %d, acted %+v", rec.Code, u.f.acted)
	}
}

// A tenant's session ends with its tenant, or its tenant's token: the
// browser is then as one never signed in, sent to the sign-in page. A
// cookie garbled or forged is no session either, and changes nothing.
func TestUITenantSessionEndsWithItsTenant(t *testing.T) {
	for _, end := range []struct {
		what string
		do   func(u *tenantUI)
	}{
		{"the tenant deleted", func(u *tenantUI) { delete(u.tokens, "acme") }},
		{"a new token for the tenant", func(u *tenantUI) { u.tokens["acme"] = "hash-acme-2" }},
	} {
		u := newTenantUI(t)
		cookie := u.signIn(acmeToken, "/ui/apps/"+ownApp)
		if rec := u.do(http.MethodGet, logOf(ownApp), cookie, nil); rec.Code != http.StatusOK {
			t.Fatalf("before %s: %d", end.what, rec.Code)
		}
		end.do(u)
		rec := u.do(http.MethodGet, logOf(ownApp), cookie, nil)
		if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), "/ui/sign-in?next=") {
			t.Errorf("after %s: %d %q, want the sign-in", end.what, rec.Code, rec.Header().Get("Location"))
		}
		if rec := u.do(http.MethodPost, "/ui/sign-in", "", url.Values{"token": {acmeToken}}); rec.Code != http.StatusUnauthorized {
			t.Errorf("signing in again after %s: %d", end.what, rec.Code)
		}
	}

	u := newTenantUI(t)
	cookie := u.signIn(acmeToken, "/ui/")
	for name, forged := range map[string]string{
		"garbled":            "t1.!!!",
		"the name changed":   renamed(cookie, "beta"),
		"as an operator's":   strings.Replace(cookie, "t1.", "s1.", 1),
		"a tenant's token":   acmeToken,
		"its signature only": cookie[strings.LastIndexByte(cookie, '.'):],
	} {
		for _, path := range []string{logOf(ownApp), "/ui/"} {
			if rec := u.do(http.MethodGet, path, forged, nil); rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), "/ui/sign-in") {
				t.Errorf("a cookie %s on %s: %d, want the sign-in", name, path, rec.Code)
			}
		}
		if rec := u.do(http.MethodPost, "/ui/act", forged, url.Values{"kind": {"kill-app"}, "id": {ownApp}, "confirm": {"yes"}}); rec.Code != http.StatusUnauthorized {
			t.Errorf("a cookie %s on /ui/act: %d", name, rec.Code)
		}
	}
	if len(u.f.acted) != 0 {
		t.Errorf("acted for a forged cookie: %+v", u.f.acted)
	}

	// A follower does not check tenants' tokens: its page says to sign in
	// on the leader, and links there.
	u.f.follower("https://10.0.0.2:7077")
	rec := u.do(http.MethodPost, "/ui/sign-in", "", url.Values{"token": {wire.TenantTokenPrefix + "acme.other"}})
	contains(t, "a tenant's sign-in on a follower", rec.Body.String(), "A tenant signs in on the leader", `href="https://10.0.0.2:7077/ui/"`)
	if len(rec.Result().Cookies()) != 0 {
		t.Error("a follower started a session it could not check")
	}
}

// renamed is the tenant's session value v with another tenant's name in
// it, its signature kept (a forgery).
func renamed(v, name string) string {
	body, sig, _ := strings.Cut(strings.TrimPrefix(v, "t1."), ".")
	p, _ := base64.RawURLEncoding.DecodeString(body)
	p = append(p[:len(p)-len("acme")], name...)
	return "t1." + base64.RawURLEncoding.EncodeToString(p) + "." + sig
}

// A worker has no tenants: its sign-in takes the operator secret only, and
// its sessions no tenant's, even one signed with its own key.
func TestWorkerUITakesNoTenant(t *testing.T) {
	sessions := httpx.NewUISessions("berth_session_w1", "s3cret", "worker w1 x", nil)
	mux := http.NewServeMux()
	Mount(mux, wire.WorkerAPI.UI, WorkerHandler(WorkerOptions{View: func(context.Context) WorkerView { return WorkerView{ID: "w1"} },
		Secret: "s3cret", Sessions: sessions, SignInNeeded: true, Log: discard()}))
	h := httpx.Authorize(wire.WorkerAPI, mux, httpx.Auth{Secret: "s3cret", UI: sessions})
	rec := post(h, "/ui/sign-in", url.Values{"token": {acmeToken}})
	if rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 || strings.Contains(rec.Body.String(), "tenant token") {
		t.Errorf("a tenant's token at a worker's sign-in: %d %v", rec.Code, rec.Result().Cookies())
	}
	forged, _ := sessions.StartTenant("acme", "hash-acme")
	req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
	req.AddCookie(&http.Cookie{Name: "berth_session_w1", Value: forged})
	out := httptest.NewRecorder()
	h.ServeHTTP(out, req)
	if out.Code != http.StatusSeeOther {
		t.Errorf("a tenant's session on a worker's page: %d, want the sign-in", out.Code)
	}
}

// The UI refuses a tenant the operators' pages and actions itself too,
// whatever the edge let through (a route declared for tenants by mistake).
func TestUIRefusesTenantsOperatorsPagesItself(t *testing.T) {
	f := &fakeSource{c: cluster(1, 1)}
	h := Handler(Options{Source: f, Log: discard()})
	token := tokenOf(t, h, "/ui/apps/"+ownApp)
	as := func(req *http.Request) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(httpx.WithPrincipal(req.Context(), httpx.Principal{Kind: httpx.KindTenant, Name: "acme", Tenant: "acme"})))
		return rec
	}
	for _, path := range []string{"/ui/", "/ui/topology", "/ui/queues", "/ui/workers/w00000"} {
		if rec := as(httptest.NewRequest(http.MethodGet, path, nil)); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "needs an operator") {
			t.Errorf("%s as a tenant, past the edge: %d", path, rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/ui/act", strings.NewReader(url.Values{"kind": {"kill-app"}, "id": {ownApp}, "csrf": {token}, "confirm": {"yes"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rec := as(req); rec.Code != http.StatusForbidden || len(f.acted) != 0 {
		t.Errorf("an action as a tenant, past the edge: %d, acted %+v", rec.Code, f.acted)
	}
}
