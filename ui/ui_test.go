package ui

import (
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
		"gpu 1/2 free", "1 decommissioning (draining)", "<td>67 ms</td>", "<td>1 min 30 s</td>")
	if strings.Contains(body, "67.852683ms") {
		t.Error("the overview shows a raw Go duration for a master's last contact")
	}

	_, body = get(t, h, "/ui/apps/app-20261124120000-0001")
	contains(t, "the app page", body, "Kill application", "executor limit", "LOST", "worker w00002 lost", "stdout", "1 executors holding 1 cores", "1 cores × 1",
		"executorLimitChanged", "executor limit set to 3 (was none)")
	_, body = get(t, h, "/ui/drivers/driver-2")
	if strings.Index(body, "driver-1") > strings.Index(body, `class="current"`) || !strings.Contains(body, "worker lost") {
		t.Errorf("the driver page's history does not show driver-1 before driver-2")
	}
	contains(t, "the driver page's history", body, "<td>1 min 30 s</td>")
	_, body = get(t, h, "/ui/apps/app-20261124120000-0000")
	contains(t, "the GPU app's page", body, "and gpu=1 per executor", "gpu=GPU-0")
	_, body = get(t, h, "/ui/workers/w00001")
	contains(t, "the worker page", body, "app-20261124120000-0000", "app-20261124120000-0001", "Decommission", "<td>GPU-1</td><td>0</td>", "gpu=GPU-0")
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
// secret; a redirect after it stays on the UI.
func TestSignIn(t *testing.T) {
	h := Handler(Options{Source: &fakeSource{c: cluster(1, 0)}, Secret: "s3cret", SignInNeeded: true, Secure: true, Log: discard()})
	if rec := post(h, "/ui/sign-in", url.Values{"token": {"nope"}}); rec.Code != http.StatusUnauthorized || rec.Header().Get("Set-Cookie") != "" {
		t.Errorf("a wrong token: %d, cookie %q", rec.Code, rec.Header().Get("Set-Cookie"))
	}
	rec := post(h, "/ui/sign-in", url.Values{"token": {"s3cret"}, "next": {"//evil.example/x"}})
	cookie := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/" || len(cookie) != 1 {
		t.Fatalf("sign-in: %d %q %v", rec.Code, rec.Header().Get("Location"), cookie)
	}
	c := cookie[0]
	if c.Name != httpx.UISessionCookie || c.Value != httpx.UISession("s3cret") || strings.Contains(c.Value, "s3cret") ||
		!c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/" {
		t.Errorf("cookie %+v", c)
	}
	if got := safeNext("/ui/apps/x?y=1"); got != "/ui/apps/x?y=1" {
		t.Errorf("safeNext kept %q", got)
	}
	for _, bad := range []string{"https://evil.example/ui/", "/v1/cluster", "//evil", "/ui/\\evil", ""} {
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
