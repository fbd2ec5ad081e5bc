package ui

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

func post(h http.Handler, path string, form url.Values) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h.ServeHTTP(rec, req)
	return rec
}

func contains(t *testing.T, what, body string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("%s does not show %q", what, p)
		}
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func TestPagesShowTheCluster(t *testing.T) {
	c := cluster(4, 2)
	c.Workers[2].State = wire.WorkerDead
	c.Workers[3].State = wire.WorkerDecommissioning
	c.Masters[0].Raft = &wire.RaftFigures{State: "Leader", LastContact: "0"}
	c.Masters[1].Raft = &wire.RaftFigures{State: "Follower", LastContact: "67.852683ms"}
	c.ActiveApps[1].Executors[1].State = wire.ExecutorLost
	c.Workers[1].Resources = []wire.ResourceUse{{Name: "gpu", Addresses: []string{"GPU-0", "GPU-1"}, Used: []float64{1, 0}, Free: 1}}
	c.Workers[1].DiskFull = "work dir /w: 3 MiB free, below --min-free-disk 64 MiB"
	// The workers card counts GPUs as it counts cores: the dead worker's
	// left out, the draining one's offered but not free.
	c.Workers[2].Resources = []wire.ResourceUse{{Name: "gpu", Addresses: []string{"GPU-0", "GPU-1"}, Used: []float64{0, 0}, Free: 2}}
	c.Workers[3].Resources = []wire.ResourceUse{{Name: "gpu", Addresses: []string{"0", "1", "2", "3"}, Used: []float64{0, 0, 0, 0}, Free: 4}}
	c.ActiveApps[0].ResourcesPerExecutor = wire.ResourceAmounts{"gpu": 1}
	c.ActiveApps[0].Executors[1].Resources = wire.ResourceGrants{"gpu": {Addresses: []string{"GPU-0"}}}
	c.ActiveDrivers = []wire.DriverStatus{{ID: "driver-2", State: wire.DriverSubmitted, Cores: 64, MemoryMB: 512, Command: []string{"pi", "--n", "9"},
		Waiting: "cannot start: no worker has 64 cores", RelaunchOf: "driver-1", SubmittedAt: t0}}
	ended := t0.Add(90 * time.Second)
	c.CompletedDrivers = []wire.DriverStatus{{ID: "driver-1", State: wire.DriverError, RelaunchedAs: "driver-2", WorkerID: "w00002", Message: "worker lost", SubmittedAt: t0, EndedAt: &ended}}
	f := &fakeSource{c: c, events: []wire.AppEvent{{Type: wire.EventExecutorLost, Time: t0, Message: "worker w00002 lost"},
		{Type: wire.EventExecutorLimitChanged, Time: t0, Message: "executor limit set to 3 (was none)"}}}
	h := Handler(Options{Source: f, Log: discard()})

	code, body := get(t, h, "/ui/")
	if code != 200 {
		t.Fatalf("overview: %d", code)
	}
	contains(t, "the overview", body, "Master m1", "ALIVE", "epoch 3", "<b>2</b> alive", "1 dead", "term 3", "applied index 42",
		"w00000", "app-20261124120000-0001", "driver-2", "cannot start: no worker has 64 cores", "leader</b>", "https://10.0.0.1:7077/ui/",
		"gpu 1/2 free", "gpu 1/6 free", "1 decommissioning (draining)", "<td>67 ms</td>", "<td>1 min 30 s</td>",
		`disk full</span>`)
	if strings.Contains(body, "67.852683ms") {
		t.Error("the overview shows a raw Go duration for a master's last contact")
	}

	_, body = get(t, h, "/ui/apps/app-20261124120000-0001")
	contains(t, "the app page", body, "Kill application", "executor limit", "LOST", "worker w00002 lost", "stdout", "1 executor holding 1 core", "1 core × 1",
		"executorLimitChanged", "executor limit set to 3 (was none)")
	_, body = get(t, h, "/ui/drivers/driver-2")
	if strings.Index(body, "driver-1") > strings.Index(body, `class="current"`) || !strings.Contains(body, "worker lost") {
		t.Errorf("the driver page's history does not show driver-1 before driver-2")
	}
	contains(t, "the driver page's history", body, "<td>1 min 30 s</td>")
	_, body = get(t, h, "/ui/apps/app-20261124120000-0000")
	contains(t, "the GPU app's page", body, "and gpu=1 per executor", "gpu=GPU-0")
	_, body = get(t, h, "/ui/workers/w00001")
	contains(t, "the worker page", body, "app-20261124120000-0000", "app-20261124120000-0001", "Decommission", "<td>GPU-1</td><td>0</td>", "gpu=GPU-0",
		"disk full: work dir /w: 3 MiB free, below --min-free-disk 64 MiB; nothing new is placed here")
	if code, _ := get(t, h, "/ui/workers/nope"); code != http.StatusNotFound {
		t.Errorf("unknown worker: %d", code)
	}
	if code, _ := get(t, h, "/ui/apps/nope"); code != http.StatusNotFound {
		t.Errorf("unknown app: %d", code)
	}
	_, body = get(t, h, "/ui/topology")
	if n := strings.Count(body, `class="seg"`); n != 3 {
		t.Errorf("topology: %d executor segments, want 3 (the LOST one is not placed)", n)
	}
	code, body = get(t, h, "/ui/static/style.css")
	if code != 200 || !strings.Contains(body, "svg.bar") {
		t.Errorf("style sheet: %d", code)
	}
}

func TestLargeListsArePaginated(t *testing.T) {
	h := Handler(Options{Source: &fakeSource{c: cluster(250, 5)}, Log: discard()})
	_, body := get(t, h, "/ui/")
	if n := strings.Count(body, `href="/ui/workers/`); n != pageSize {
		t.Errorf("%d workers on the first page, want %d", n, pageSize)
	}
	contains(t, "page 1", body, "page 1 of 3 (250)", `?workers=2`)
	_, body = get(t, h, "/ui/?workers=3")
	if n := strings.Count(body, `href="/ui/workers/`); n != 50 || !strings.Contains(body, "w00249") {
		t.Errorf("last page: %d workers", n)
	}
}

// Actions need the page's CSRF token; with it, they reach the source.
func TestActionsNeedThePagesToken(t *testing.T) {
	f := &fakeSource{c: cluster(1, 1)}
	h := Handler(Options{Source: f, Log: discard()})
	_, body := get(t, h, "/ui/apps/app-20261124120000-0000")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token in the app page's forms")
	}
	kill := url.Values{"kind": {"kill-app"}, "id": {"app-20261124120000-0000"}, "confirm": {"yes"}}
	for name, token := range map[string]string{"none": "", "wrong": strings.Repeat("0", len(m[1]))} {
		form := url.Values{"kind": kill["kind"], "id": kill["id"], "confirm": {"yes"}, "csrf": {token}}
		if rec := post(h, "/ui/act", form); rec.Code != http.StatusForbidden {
			t.Errorf("%s token: %d", name, rec.Code)
		}
	}
	if len(f.acted) != 0 {
		t.Fatalf("acted without the token: %v", f.acted)
	}
	kill.Set("csrf", m[1])
	rec := post(h, "/ui/act", kill)
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), "/ui/apps/app-20261124120000-0000") {
		t.Errorf("kill: %d %s", rec.Code, rec.Header().Get("Location"))
	}
	limit := url.Values{"kind": {"set-limit"}, "id": {"app-20261124120000-0000"}, "limit": {"-1"}, "csrf": {m[1]}, "confirm": {"yes"}}
	if rec := post(h, "/ui/act", limit); rec.Code != http.StatusBadRequest {
		t.Errorf("a negative limit: %d", rec.Code)
	}
	limit.Set("limit", "3")
	post(h, "/ui/act", limit)
	if len(f.acted) != 2 || f.acted[0] != (Action{Kind: ActionKillApp, ID: "app-20261124120000-0000"}) || f.acted[1].Limit != 3 {
		t.Errorf("actions %+v", f.acted)
	}
}

// Signing in checks the secret and sets a session cookie that is not the
// secret; a redirect after it stays on the UI. Signing out ends the
// session, not only its cookie.
func TestSignInAndOut(t *testing.T) {
	sessions := httpx.NewUISessions("berth_session", "s3cret", "masters", nil)
	ended := httpx.NewEndedSet(nil)
	sessions.Ended, sessions.End = ended.Ended, ended.End
	h := Handler(Options{Source: &fakeSource{c: cluster(1, 0)}, Secret: "s3cret", Sessions: sessions, SignInNeeded: true, Secure: true, Log: discard()})
	if rec := post(h, "/ui/sign-in", url.Values{"token": {"nope"}}); rec.Code != http.StatusUnauthorized || rec.Header().Get("Set-Cookie") != "" {
		t.Errorf("a wrong token: %d, cookie %q", rec.Code, rec.Header().Get("Set-Cookie"))
	}
	rec := post(h, "/ui/sign-in", url.Values{"token": {"s3cret"}, "next": {"//evil.example/x"}})
	cookie := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/" || len(cookie) != 1 {
		t.Fatalf("sign-in: %d %q %v", rec.Code, rec.Header().Get("Location"), cookie)
	}
	c := cookie[0]
	if c.Name != "berth_session" || sessions.Check(context.Background(), c.Value) != nil || strings.Contains(c.Value, "s3cret") ||
		!c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/" || c.Expires.IsZero() {
		t.Errorf("cookie %+v", c)
	}
	_, page := get(t, h, "/ui/")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the page")
	}
	req := httptest.NewRequest(http.MethodPost, "/ui/sign-out", strings.NewReader(url.Values{"csrf": {m[1]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(c)
	out := httptest.NewRecorder()
	h.ServeHTTP(out, req)
	if out.Code != http.StatusSeeOther || sessions.Check(context.Background(), c.Value) == nil {
		t.Errorf("sign-out: %d; the session still live: %v", out.Code, sessions.Check(context.Background(), c.Value) == nil)
	}
	if got := safeNext("/ui/apps/x?y=1"); got != "/ui/apps/x?y=1" {
		t.Errorf("safeNext kept %q", got)
	}
	for _, bad := range []string{"https://evil.example/ui/", "/v1/cluster", "//evil", "/ui/\\evil", "", "/ui/" + strings.Repeat("a", httpx.MaxEchoedURI)} { // the last: its sign-in page would carry it whole
		if got := safeNext(bad); got != "/ui/" {
			t.Errorf("safeNext(%q) = %q", bad, got)
		}
	}
}

func TestFewestExecutors(t *testing.T) {
	ws := []wire.WorkerStatus{{Cores: 8, State: wire.WorkerAlive}, {Cores: 4, State: wire.WorkerAlive}, {Cores: 16, State: wire.WorkerDead}, {Cores: 2, State: wire.WorkerAlive}}
	for _, c := range []struct{ cores, per, want int }{{0, 0, 0}, {8, 0, 1}, {9, 0, 2}, {14, 0, 3}, {15, 0, 0}, {9, 2, 5}} {
		if got := fewest(c.cores, c.per, capacities(ws)); got != c.want {
			t.Errorf("fewest(%d, %d) = %d, want %d", c.cores, c.per, got, c.want)
		}
	}
}

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
		{url.Values{"kind": {"clear-worker"}, "id": {"w00000"}}, Action{Kind: ActionClearWorker, ID: "w00000"}, "Clear worker w00000?", "ALIVE, 0 of 4 cores in use"},
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
	c.Workers[0].Resources = []wire.ResourceUse{{Name: "gpu", Addresses: []string{"0", "1"}, Used: []float64{1, 0}, Free: 1}}
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
		"/ui/logs?driver=driver-1&stream=stdout", "/ui/apps/nope", "/ui/workers/nope", "/ui/queues"} {
		_, body := get(t, h, path)
		contains(t, path+" on a follower", body, banner, link)
		for _, action := range []string{"Kill application", "Kill driver", "Decommission"} {
			if strings.Contains(body, action) {
				t.Errorf("%s on a follower offers %q", path, action)
			}
		}
	}
	// A follower knows the GPUs offered, not which are free.
	_, body := get(t, h, "/ui/")
	contains(t, "a follower's overview", body, "gpu 2 offered (free: on the leader)")
	if strings.Contains(body, "gpu 1/2 free</p>") {
		t.Error("a follower's workers card says which GPUs are free")
	}
	_, body = get(t, h, "/ui/apps/"+app)
	contains(t, "the app's record on a follower", body, app, "job 0", "RUNNING")
	for _, form := range []url.Values{
		{"kind": {"kill-app"}, "id": {app}, "csrf": {token}},
		{"kind": {"decommission"}, "id": {"w00000"}, "csrf": {token}},
		{"kind": {"kill-app"}, "id": {app}, "csrf": {token}, "confirm": {"yes"}},
	} {
		rec := post(h, "/ui/act", form)
		contains(t, "a form posted to a follower", rec.Body.String(), banner, link)
		if strings.Contains(rec.Body.String(), `name="confirm"`) {
			t.Errorf("a follower offers to confirm %s %s", form.Get("kind"), form.Get("id"))
		}
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
	sessions := httpx.NewUISessions("berth_session", "s3cret", "masters", nil)
	Mount(mux, wire.MasterAPI.UI, Handler(Options{Source: &fakeSource{c: cluster(1, 0)}, Secret: "s3cret", Sessions: sessions, SignInNeeded: true, Log: discard()}))
	h := httpx.Authorize(wire.MasterAPI, mux, httpx.Auth{Secret: "s3cret", UI: sessions})
	good, _ := sessions.Start()
	do := func(path, cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "berth_session", Value: cookie})
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
	if rec := do("/ui/topology", good); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Topology") {
		t.Errorf("a page with the session: %d", rec.Code)
	}
	if rec := do("/v1/cluster", good); rec.Code != http.StatusUnauthorized {
		t.Errorf("the API with the UI's session: %d", rec.Code)
	}
	if rec := do("/", ""); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/" {
		t.Errorf("/: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

// A master that does not answer is shown as such with since when and what
// the last ask got; the masters' versions are shown, and differing ones
// are called out (an upgrade under way).
func TestOverviewShowsUnreachableMastersAndVersions(t *testing.T) {
	c := cluster(1, 0)
	c.Masters[0].Raft = &wire.RaftFigures{State: "Leader", LastContact: "0"}
	c.Masters[0].Version = "v0.9.0"
	since, seen := t0.Add(-time.Minute), t0.Add(-61*time.Second)
	c.Masters[1].UnreachableSince, c.Masters[1].LastSeen = &since, &seen
	c.Masters[1].Unreachable = "dial tcp 10.0.0.2:7077: connect: connection refused"
	c.Masters[1].Version = "v0.9.0"
	h := Handler(Options{Source: &fakeSource{c: c}, Log: discard()})
	_, body := get(t, h, "/ui/")
	contains(t, "the overview", body, "not answering since "+when(since), "(last seen "+when(seen)+")",
		`title="dial tcp 10.0.0.2:7077: connect: connection refused"`, `<td class="version">v0.9.0</td>`)
	if strings.Contains(body, "different versions") {
		t.Error("the overview calls one version mixed")
	}
	c.Masters[1].Version = "v0.10.0"
	_, body = get(t, h, "/ui/")
	contains(t, "the overview of a mixed cluster", body, "Masters run different versions", `<td class="version">v0.10.0</td>`)
}
