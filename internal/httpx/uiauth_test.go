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
	ui := wire.MasterAPI.UI
	mux.Handle(wire.MasterAPI.Cluster.Mux(), echoPrincipal)
	for _, e := range []wire.Endpoint{ui.UIPages.Endpoint, ui.UIActions.Endpoint, ui.UISignIn.Endpoint} {
		mux.Handle(e.Mux(), UIHandler(echoPrincipal, ui.UISignIn.Pattern))
	}
	sessions := NewUISessions("berth_session", "s3cret", "masters", nil)
	h := Authorize(wire.MasterAPI, mux, Auth{Secret: "s3cret", UI: sessions})
	do := func(method, path, cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "berth_session", Value: cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	good, _ := sessions.Start()
	wrong, _ := NewUISessions("berth_session", "wrong", "masters", nil).Start()
	if strings.Contains(good, "s3cret") {
		t.Fatal("the session value holds the secret")
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
	for _, cookie := range []string{"", wrong, "s3cret"} {
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
	// A page asked for with a huge URI is not repeated in next=.
	if rec := do("GET", "/ui/apps/"+strings.Repeat("x", MaxEchoedURI), ""); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/sign-in" {
		t.Errorf("a huge page URI: %d to %.80q, want the sign-in without next", rec.Code, rec.Header().Get("Location"))
	}
}

var echoPrincipal = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Principal", PrincipalOf(r.Context()).Kind.String())
})

// The UI's treatment (the cookie, the redirect to the sign-in) comes from
// how a handler is registered, not from its path: a handler not registered
// as the UI's gets none of it under /ui/, and a server without a UI takes
// no cookie even on a UI's handler.
func TestUITreatmentFollowsTheHandler(t *testing.T) {
	ui := wire.MasterAPI.UI
	plain := http.NewServeMux()
	plain.Handle(ui.UIPages.Mux(), echoPrincipal)
	marked := http.NewServeMux()
	marked.Handle(ui.UIPages.Mux(), UIHandler(echoPrincipal, ui.UISignIn.Pattern))
	sessions := NewUISessions("berth_session", "s3cret", "masters", nil)
	good, _ := sessions.Start()
	for _, c := range []struct {
		name   string
		mux    *http.ServeMux
		ui     bool
		cookie string
		want   int
	}{
		{"a plain handler with the cookie", plain, true, good, http.StatusUnauthorized},
		{"a plain handler without", plain, true, "", http.StatusUnauthorized},
		{"a UI's handler with the cookie", marked, true, good, http.StatusOK},
		{"a UI's handler without", marked, true, "", http.StatusSeeOther},
		{"a UI's handler on a server without a UI", marked, false, good, http.StatusUnauthorized},
	} {
		req := httptest.NewRequest("GET", "/ui/apps/x", nil)
		if c.cookie != "" {
			req.AddCookie(&http.Cookie{Name: "berth_session", Value: c.cookie})
		}
		rec := httptest.NewRecorder()
		auth := Auth{Secret: "s3cret"}
		if c.ui {
			auth.UI = sessions
		}
		Authorize(wire.MasterAPI, c.mux, auth).ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, rec.Code, c.want)
		}
	}
}

// Form bodies pass the guard on the routes wire declares for the UI's
// forms only (the UI checks their token); a cross-site Origin is refused
// there too.
func TestGuardTakesFormsOnTheUIOnly(t *testing.T) {
	h := Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), true)
	for _, c := range []struct {
		method, path, origin string
		want                 int
	}{
		{"POST", "/ui/act", "", 200}, {"POST", "/ui/sign-in", "", 200}, {"POST", "/ui/act", "http://evil.example", 403},
		{"POST", "/v1/drivers", "", 403}, {"PUT", "/ui/act", "", 403}, {"POST", "/uix/act", "", 403},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader("kind=kill-app"))
		req.Host = "127.0.0.1:7077"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s %s origin %q: %d, want %d", c.method, c.path, c.origin, rec.Code, c.want)
		}
	}
}
