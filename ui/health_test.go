package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

const (
	sickReason = "processes of 3 apps or drivers failed here within 10m0s (app-a, app-b, driver-c)"
	keptReason = "2 executors failed there within 10m0s (last: exited with code 1)"
)

// healthCluster is cluster(3, 2) where app 0 asks for ports and a check,
// its executors healthy and starting, kept off w00002, which is unhealthy;
// a driver with a port is unhealthy; app 1 has neither ports nor checks.
func healthCluster() *wire.ClusterStatus {
	c := cluster(3, 2)
	since := t0.Add(-3 * time.Minute)
	c.Workers[2].Unhealthy, c.Workers[2].UnhealthySince = sickReason, &since
	a := &c.ActiveApps[0]
	a.Ports = []string{"http", "admin"}
	a.Checks = []wire.Check{{Name: "web", Type: wire.CheckHTTP, Port: "http", Path: "/health",
		Interval: dur(5 * time.Second), StartPeriod: dur(30 * time.Second)}}
	three := 3
	a.Restart = &wire.RestartPolicy{Attempts: &three, Delay: dur(5 * time.Second)}
	a.Executors[0].Ports, a.Executors[0].Health = map[string]int{"http": 20001, "admin": 20002}, wire.HealthHealthy
	a.Executors[1].Ports, a.Executors[1].Health = map[string]int{"http": 20003, "admin": 20004}, wire.HealthStarting
	a.Excluded = []wire.Exclusion{{WorkerID: "w00002", Until: t0.Add(10 * time.Minute), Reason: keptReason}}
	c.ActiveDrivers = []wire.DriverStatus{{ID: "driver-1", State: wire.DriverRunning, Cores: 1, MemoryMB: 256, Command: []string{"svc"},
		WorkerID: "w00001", SubmittedAt: t0, Ports: map[string]int{"ui": 20005}, Health: wire.HealthUnhealthy}}
	return c
}

func dur(d time.Duration) *wire.Duration { v := wire.Duration(d); return &v }

// The app page shows its executors' ports and health, its checks, its
// restart policy and the workers it is kept off; the driver page its
// ports and health; the overview and the worker page an unhealthy worker,
// since when and why, with a Clear button for it only.
func TestPagesShowHealthPortsAndExclusions(t *testing.T) {
	c := healthCluster()
	f := &fakeSource{c: c, events: []wire.AppEvent{{Type: wire.EventExecutorHealthy, Time: t0,
		Executor: &wire.ExecutorStatus{ID: 0, WorkerID: "w00000", State: wire.ExecutorRunning, Health: wire.HealthHealthy}}}}
	h := Handler(Options{Source: f, Log: discard()})
	app := "app-20261124120000-0000"

	_, body := get(t, h, "/ui/apps/"+app)
	contains(t, "the checked app's page", body, "<th>health</th><th>ports</th>",
		`<span class="health health-healthy">healthy</span>`, `<span class="health health-starting">starting</span>`,
		`<span class="port">admin=20002</span> <span class="port">http=20001</span>`, `<span class="port">http=20003</span>`,
		"ports: http, admin", "check web: GET :http/health every 5s, timeout 2s, 3 failures in a row, start period 30s",
		"restart policy: 3 attempts within 10m0s, then fail, 5s between",
		"Kept off workers", `<a href="/ui/workers/w00002">w00002</a>`, when(t0.Add(10*time.Minute)), keptReason,
		"0 on w00000: RUNNING (healthy)")
	if strings.Index(body, "admin=20002") > strings.Index(body, "http=20001") {
		t.Error("an executor's ports are not in the order of their labels")
	}

	_, body = get(t, h, "/ui/apps/app-20261124120000-0001")
	for _, s := range []string{"<th>health</th>", "Kept off workers", "check ", `class="port"`} {
		if strings.Contains(body, s) {
			t.Errorf("the page of an app without ports, checks or exclusions shows %q", s)
		}
	}

	_, body = get(t, h, "/ui/drivers/driver-1")
	contains(t, "the driver page", body, `health <span class="health health-unhealthy">unhealthy</span>`, `ports <span class="port">ui=20005</span>`)

	_, body = get(t, h, "/ui/")
	contains(t, "the overview", body, `<a class="unhealthy" href="#workers">1 unhealthy</a>`,
		`<span class="unhealthy" title="`+sickReason+`">UNHEALTHY</span> since `+when(t0.Add(-3*time.Minute)), sickReason)
	if n := strings.Count(body, `value="clear-worker"`); n != 1 {
		t.Errorf("the overview offers %d Clear forms, want the unhealthy worker's", n)
	}
	if f := formOf(t, body); f.Get("kind") != "clear-worker" || f.Get("id") != "w00002" {
		t.Errorf("the overview's Clear form posts %v", f)
	}

	_, body = get(t, h, "/ui/workers/w00002")
	contains(t, "the unhealthy worker's page", body, `<span class="unhealthy">UNHEALTHY</span> since `+when(t0.Add(-3*time.Minute)),
		sickReason, "Nothing new is placed here", `>Clear</button>`, `data-confirm="Clear worker w00002?`,
		"Apps kept off this worker", `<a href="/ui/apps/`+app+`">`+app+`</a></td><td>job 0</td>`, keptReason)
	_, body = get(t, h, "/ui/workers/w00001")
	contains(t, "a worker's page", body, `<span class="health health-unhealthy">unhealthy</span></td><td><span class="port">ui=20005</span>`,
		`<span class="health health-starting">starting</span></td><td><span class="port">admin=20004</span>`)
	for _, s := range []string{"UNHEALTHY", "clear-worker", "Apps kept off"} {
		if strings.Contains(body, s) {
			t.Errorf("the page of a healthy worker no app is kept off shows %q", s)
		}
	}
	// A worker only apps are kept off (not unhealthy) is offered Clear too.
	c.Workers[2].Unhealthy, c.Workers[2].UnhealthySince = "", nil
	_, body = get(t, h, "/ui/workers/w00002")
	contains(t, "the page of a worker an app is kept off", body, `value="clear-worker"`, "Apps kept off this worker")
	if strings.Contains(body, "UNHEALTHY") {
		t.Error("a worker that is not unhealthy is said to be")
	}
}

// What the master says of a worker or an exclusion is text, not markup.
func TestHealthTextEscaped(t *testing.T) {
	const evil = `<img src=x onerror=alert(1)>`
	c := healthCluster()
	c.Workers[2].Unhealthy = evil
	c.ActiveApps[0].Excluded[0].Reason = evil
	c.ActiveApps[0].Executors[0].Ports = map[string]int{evil: 1}
	h := Handler(Options{Source: &fakeSource{c: c}, Log: discard()})
	for _, path := range []string{"/ui/", "/ui/workers/w00002", "/ui/apps/app-20261124120000-0000"} {
		if _, body := get(t, h, path); strings.Contains(body, evil) || !strings.Contains(body, "&lt;img src=x") {
			t.Errorf("%s shows the master's text as markup", path)
		}
	}
}

// Clear is a form as the other actions are: refused without the page's
// token, confirmed first (with what the worker is now), then it clears
// the worker through the source and goes back to its page. A source that
// cannot clear says so; a follower does not act.
func TestClearWorkerAction(t *testing.T) {
	f := &fakeSource{c: healthCluster()}
	h := Handler(Options{Source: f, Log: discard()})
	token := tokenOf(t, h, "/ui/workers/w00002")
	form := url.Values{"kind": {"clear-worker"}, "id": {"w00002"}}
	for name, csrf := range map[string]string{"no": "", "a wrong": strings.Repeat("0", len(token))} {
		form.Set("csrf", csrf)
		form.Set("confirm", "yes")
		if rec := post(h, "/ui/act", form); rec.Code != http.StatusForbidden {
			t.Errorf("clear with %s token: %d", name, rec.Code)
		}
	}
	if len(f.acted) != 0 {
		t.Fatalf("cleared without the token: %v", f.acted)
	}
	form.Set("csrf", token)
	form.Del("confirm")
	rec := post(h, "/ui/act", form)
	contains(t, "the confirmation", rec.Body.String(), "Clear worker w00002? Its failures are forgotten",
		"Worker w00002: ALIVE, 0 of 4 cores in use. Unhealthy: "+sickReason+". 1 apps are kept off it.", "Confirm")
	if len(f.acted) != 0 {
		t.Fatalf("cleared before the confirmation: %v", f.acted)
	}
	rec = post(h, "/ui/act", formOf(t, rec.Body.String()))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/workers/w00002?done=clear-worker" {
		t.Errorf("clear confirmed: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if len(f.acted) != 1 || f.acted[0] != (Action{Kind: ActionClearWorker, ID: "w00002"}) {
		t.Errorf("acted %+v", f.acted)
	}
	if rec := post(h, "/ui/act", url.Values{"kind": {"clear-worker"}, "id": {"w-nope"}, "csrf": {token}}); rec.Code != http.StatusNotFound {
		t.Errorf("clearing an unknown worker: %d", rec.Code)
	}

	// A follower offers no Clear and does not act.
	f.acted = nil
	f.follower("https://10.0.0.2:7077")
	for _, path := range []string{"/ui/", "/ui/workers/w00002"} {
		if _, body := get(t, h, path); strings.Contains(body, "clear-worker") {
			t.Errorf("%s on a follower offers Clear", path)
		}
	}
	for _, confirm := range []string{"", "yes"} {
		post(h, "/ui/act", url.Values{"kind": {"clear-worker"}, "id": {"w00002"}, "csrf": {token}, "confirm": {confirm}})
	}
	if len(f.acted) != 0 {
		t.Errorf("a follower cleared: %v", f.acted)
	}
}

// Mounted behind the API's authorization, as a master serves it, the
// Clear form is carried out for an operator only: a tenant, a driver, a
// wrong credential or none are refused before the UI sees the form, even
// with the page's token.
func TestClearWorkerOperatorsOnly(t *testing.T) {
	f := &fakeSource{c: healthCluster()}
	sessions := httpx.NewUISessions("berth_session", "s3cret", "masters", nil)
	ui := Handler(Options{Source: f, Secret: "s3cret", Sessions: sessions, SignInNeeded: true, Log: discard()})
	mux := http.NewServeMux()
	Mount(mux, wire.MasterAPI.UI, ui)
	h := httpx.Authorize(wire.MasterAPI, mux, httpx.Auth{Secret: "s3cret", UI: sessions,
		Bearer: func(_ context.Context, token string) (httpx.Principal, error) {
			if strings.HasPrefix(token, wire.TenantTokenPrefix) {
				return httpx.Principal{Kind: httpx.KindTenant, Name: "acme", Tenant: "acme"}, nil
			}
			return httpx.Principal{Kind: httpx.KindDriver, Name: "driver-1"}, nil
		}})
	token := tokenOf(t, ui, "/ui/workers/w00002")
	form := url.Values{"kind": {"clear-worker"}, "id": {"w00002"}, "csrf": {token}, "confirm": {"yes"}}
	clear := func(bearer string, cookie *http.Cookie) int {
		req := httptest.NewRequest(http.MethodPost, "/ui/act", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, c := range []struct {
		who    string
		bearer string
		want   int
	}{
		{"a tenant", wire.TenantTokenPrefix + "acme.x", http.StatusForbidden},
		{"a driver", wire.DriverTokenPrefix + "driver-1.x", http.StatusForbidden},
		{"a wrong secret", "nope", http.StatusUnauthorized},
		{"nobody", "", http.StatusUnauthorized},
	} {
		if got := clear(c.bearer, nil); got != c.want {
			t.Errorf("clear by %s: %d, want %d", c.who, got, c.want)
		}
	}
	if len(f.acted) != 0 {
		t.Fatalf("cleared for a caller who is not an operator: %v", f.acted)
	}
	session, _ := sessions.Start()
	if got := clear("", &http.Cookie{Name: "berth_session", Value: session}); got != http.StatusSeeOther {
		t.Errorf("clear by an operator's session: %d", got)
	}
	if got := clear("s3cret", nil); got != http.StatusSeeOther {
		t.Errorf("clear with the operator secret: %d", got)
	}
	if len(f.acted) != 2 || f.acted[0] != (Action{Kind: ActionClearWorker, ID: "w00002"}) {
		t.Errorf("acted %+v", f.acted)
	}
}

// when is a time as the pages show it.
func when(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }
