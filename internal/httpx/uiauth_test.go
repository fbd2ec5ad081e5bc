package httpx

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// The UI's session cookie is an operator's credential on the UI's pages
// only, never on the JSON API; a browser without a session is sent to the
// sign-in page, and the sign-in page itself is open.
func TestUISessionCookieOpensTheUIOnly(t *testing.T) {
	mux := http.NewServeMux()
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Principal", PrincipalOf(r.Context()).Kind.String())
	}
	ui := wire.MasterAPI.UI
	for _, e := range []wire.Endpoint{wire.MasterAPI.Cluster.Endpoint, ui.UIPages.Endpoint, ui.UIActions.Endpoint, ui.UISignIn.Endpoint} {
		mux.HandleFunc(e.Mux(), echo)
	}
	h := Authorize(wire.MasterAPI, mux, Auth{Secret: "s3cret", UI: true})
	do := func(method, path, cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: UISessionCookie, Value: cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	good := UISession("s3cret")
	if good == UISession("other") || strings.Contains(good, "s3cret") {
		t.Fatal("the session value does not depend on the secret alone, or holds it")
	}
	if rec := do("GET", "/ui/apps/x", good); rec.Code != 200 || rec.Header().Get("X-Principal") != "operator" {
		t.Errorf("a page with the session: %d %q", rec.Code, rec.Header().Get("X-Principal"))
	}
	if rec := do("POST", "/ui/act", good); rec.Code != 200 {
		t.Errorf("a form with the session: %d", rec.Code)
	}
	if rec := do("GET", "/v1/cluster", good); rec.Code != http.StatusUnauthorized {
		t.Errorf("the JSON API took the UI's cookie: %d", rec.Code)
	}
	for _, cookie := range []string{"", UISession("wrong"), "s3cret"} {
		rec := do("GET", "/ui/apps/x", cookie)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/sign-in?next=%2Fui%2Fapps%2Fx" {
			t.Errorf("cookie %q: %d %q, want a redirect to the sign-in", cookie, rec.Code, rec.Header().Get("Location"))
		}
		if rec := do("POST", "/ui/act", cookie); rec.Code != http.StatusUnauthorized {
			t.Errorf("a form with cookie %q: %d", cookie, rec.Code)
		}
	}
	if rec := do("GET", "/ui/sign-in", ""); rec.Code != 200 {
		t.Errorf("the sign-in page: %d", rec.Code)
	}
}

// Form bodies pass the guard on the UI's paths only (the UI checks their
// token); a cross-site Origin is refused there too.
func TestGuardTakesFormsOnTheUIOnly(t *testing.T) {
	h := Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), true)
	for _, c := range []struct {
		path, origin string
		want         int
	}{{"/ui/act", "", 200}, {"/ui/act", "http://evil.example", 403}, {"/v1/drivers", "", 403}} {
		req := httptest.NewRequest("POST", c.path, strings.NewReader("kind=kill-app"))
		req.Host = "127.0.0.1:7077"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s origin %q: %d, want %d", c.path, c.origin, rec.Code, c.want)
		}
	}
}
