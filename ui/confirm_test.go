package ui

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

var hiddenField = regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`)

// formOf is the hidden fields of the first form posting to /ui/act in
// body, as a browser would post them.
func formOf(t *testing.T, body string) url.Values {
	t.Helper()
	_, form, ok := strings.Cut(body, `action="/ui/act"`)
	form, _, _ = strings.Cut(form, "</form>")
	if !ok {
		t.Fatal("no form posting to /ui/act")
	}
	out := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(form, -1) {
		out.Set(m[1], m[2])
	}
	return out
}

// tokenOf is the CSRF token of the forms of the page at path.
func tokenOf(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	_, page := get(t, h, path)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the forms of %s", path)
	}
	return m[1]
}

// With scripts off, every action asks first: its form's post is answered
// with a page that says what will happen, and only that page's form
// (confirm=yes) carries the action out. Both posts need the page's token.
func TestEveryActionAsksFirst(t *testing.T) {
	c := cluster(2, 1)
	c.Workers[1].State = wire.WorkerDecommissioning
	c.ActiveDrivers = []wire.DriverStatus{{ID: "driver-1", State: wire.DriverRunning, Cores: 1, Command: []string{"pi"}, WorkerID: "w00000"}}
	f := &fakeSource{c: c}
	h := Handler(Options{Source: f, Log: discard()})
	app := "app-20261124120000-0000"
	token := tokenOf(t, h, "/ui/apps/"+app)
	for _, c := range []struct {
		form           url.Values
		want           Action
		question, what string
	}{
		{url.Values{"kind": {"kill-app"}, "id": {app}}, Action{Kind: ActionKillApp, ID: app}, "Kill application " + app, "2 executors holding 3 cores"},
		{url.Values{"kind": {"set-limit"}, "id": {app}, "limit": {"2"}}, Action{Kind: ActionSetLimit, ID: app, Limit: 2}, "Set the executor limit of " + app + " to 2?", "RUNNING"},
		{url.Values{"kind": {"kill-driver"}, "id": {"driver-1"}}, Action{Kind: ActionKillDriver, ID: "driver-1"}, "Kill driver driver-1?", "RUNNING, 1 cores, pi"},
		{url.Values{"kind": {"decommission"}, "id": {"w00000"}}, Action{Kind: ActionDecommission, ID: "w00000"}, "Decommission worker w00000?", "ALIVE, 0 of 4 cores in use"},
		{url.Values{"kind": {"undrain"}, "id": {"w00001"}}, Action{Kind: ActionUndrain, ID: "w00001"}, "End the drain of w00001?", "DECOMMISSIONING"},
	} {
		f.acted = nil
		if rec := post(h, "/ui/act", c.form); rec.Code != http.StatusForbidden {
			t.Errorf("%s without the token: %d", c.want.Kind, rec.Code)
		}
		c.form.Set("csrf", token)
		rec := post(h, "/ui/act", c.form)
		body := rec.Body.String()
		if rec.Code != http.StatusOK || len(f.acted) != 0 {
			t.Errorf("%s unconfirmed: %d, acted %v", c.want.Kind, rec.Code, f.acted)
			continue
		}
		contains(t, string(c.want.Kind)+"'s confirmation", body, c.question, c.what, "Confirm", "Cancel")
		confirmed := formOf(t, body)
		if confirmed.Get("confirm") != "yes" || confirmed.Get("csrf") != token {
			t.Errorf("%s: the confirmation's form %v", c.want.Kind, confirmed)
		}
		rec = post(h, "/ui/act", confirmed)
		if rec.Code != http.StatusSeeOther || len(f.acted) != 1 || f.acted[0] != c.want {
			t.Errorf("%s confirmed: %d, acted %+v", c.want.Kind, rec.Code, f.acted)
		}
	}
	// A target that is gone is said at once, not after the confirmation.
	rec := post(h, "/ui/act", url.Values{"kind": {"kill-app"}, "id": {"app-nope"}, "csrf": {token}})
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "app-nope") {
		t.Errorf("confirming the kill of an unknown app: %d", rec.Code)
	}
	// The pages' own buttons ask in the page, and their script marks the
	// form confirmed; the confirmation page's form asks nothing more.
	_, body := get(t, h, "/ui/apps/"+app)
	contains(t, "the app page", body, `data-confirm="Kill application `+app)
	_, script := get(t, h, "/ui/static/live.js")
	contains(t, "live.js", script, `window.confirm(msg)`, `yes.name = "confirm"`, `yes.value = "yes"`)
	rec = post(h, "/ui/act", url.Values{"kind": {"kill-app"}, "id": {app}, "csrf": {token}})
	if strings.Contains(rec.Body.String(), "data-confirm") {
		t.Error("the confirmation page asks again in the page")
	}
}

// Every page a follower serves says it is a follower's view and links to
// the leader, and offers no action; the leader's pages say nothing of it.
func TestFollowerPagesSayItAndLinkToTheLeader(t *testing.T) {
	const leader = "https://10.0.0.2:7077"
	c := cluster(2, 1)
	c.ActiveDrivers = []wire.DriverStatus{{ID: "driver-1", State: wire.DriverRunning, Cores: 1, Command: []string{"pi"}, WorkerID: "w00000"}}
	f := &fakeSource{c: c}
	h := Handler(Options{Source: f, Log: discard()})
	banner := "follower's view"
	link := `href="` + leader + `/ui/"`
	if _, body := get(t, h, "/ui/"); strings.Contains(body, banner) {
		t.Error("the leader's overview says it is a follower's view")
	}
	app := "app-20261124120000-0000"
	token := tokenOf(t, h, "/ui/apps/"+app)
	f.follower(leader)
	for _, path := range []string{"/ui/", "/ui/topology", "/ui/workers/w00000", "/ui/apps/" + app, "/ui/drivers/driver-1",
		"/ui/logs?driver=driver-1&stream=stdout", "/ui/apps/nope", "/ui/workers/nope"} {
		_, body := get(t, h, path)
		contains(t, path+" on a follower", body, banner, link)
		for _, action := range []string{"Kill application", "Kill driver", "Decommission"} {
			if strings.Contains(body, action) {
				t.Errorf("%s on a follower offers %q", path, action)
			}
		}
	}
	_, body := get(t, h, "/ui/apps/"+app)
	contains(t, "the app's record on a follower", body, app, "job 0", "RUNNING")
	for _, form := range []url.Values{
		{"kind": {"kill-app"}, "id": {app}, "csrf": {token}},
		{"kind": {"decommission"}, "id": {"w00000"}, "csrf": {token}},
		{"kind": {"kill-app"}, "id": {app}, "csrf": {token}, "confirm": {"yes"}},
	} {
		rec := post(h, "/ui/act", form)
		contains(t, "a form posted to a follower", rec.Body.String(), banner, link)
	}
	if len(f.acted) != 0 {
		t.Errorf("a follower acted: %v", f.acted)
	}
}

// Mounted on a daemon's mux and served through the API's authorization,
// the UI sends a browser without a session to its sign-in page, serves a
// signed-in one, and sends / to the pages.
func TestMountServesTheUIBehindItsSignIn(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc(wire.MasterAPI.Cluster.Mux(), func(http.ResponseWriter, *http.Request) {})
	Mount(mux, wire.MasterAPI.UI, Handler(Options{Source: &fakeSource{c: cluster(1, 0)}, Secret: "s3cret", SignInNeeded: true, Log: discard()}))
	h := httpx.Authorize(wire.MasterAPI, mux, httpx.Auth{Secret: "s3cret", UI: true})
	do := func(path, cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: httpx.UISessionCookie, Value: cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := do("/ui/topology", ""); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/sign-in?next=%2Fui%2Ftopology" {
		t.Errorf("a page without a session: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := do("/ui/sign-in", ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `name="token"`) {
		t.Errorf("the sign-in page: %d", rec.Code)
	}
	if rec := do("/ui/topology", httpx.UISession("s3cret")); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Topology") {
		t.Errorf("a page with the session: %d", rec.Code)
	}
	if rec := do("/v1/cluster", httpx.UISession("s3cret")); rec.Code != http.StatusUnauthorized {
		t.Errorf("the API with the UI's session: %d", rec.Code)
	}
	if rec := do("/", ""); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/" {
		t.Errorf("/: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}
