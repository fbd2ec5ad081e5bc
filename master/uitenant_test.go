package master

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// Through the master's HTTP stack: a tenant signs in to the UI with its
// token and its session opens its own app's page, refuses another's as an
// unknown one and the overview as an operator's; its sign-out is audited
// as the tenant's; a session of a tenant deleted is no session.
func TestTenantUISessionOnAMaster(t *testing.T) {
	engine := persistence.NewMemory()
	_, base := runMaster(t, Config{WorkerTimeout: time.Minute, Secret: "s3cret"}, engine, nil)
	api := func(method, path, bearer string, body any) (int, []byte) {
		t.Helper()
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	var token string
	testproc.Eventually(t, 10*time.Second, "the tenant made", func() error { // the master elects itself
		status, body := api("POST", wire.MasterAPI.CreateTenant.Path("acme"), "s3cret", wire.TenantSpec{Queues: []string{wire.DefaultQueue}})
		var created wire.TenantCreated
		if status != http.StatusOK || json.Unmarshal(body, &created) != nil {
			return &httpStatus{status, string(body)}
		}
		token = created.Token
		return nil
	})
	status, body := api("POST", wire.MasterAPI.RegisterApp.Path(), token, wire.AppDescription{Name: "mine", Command: []string{"true"}, MaxCores: 1, MemoryPerExecutorMB: 64, Detached: true})
	var own wire.Submitted
	if status != http.StatusOK || json.Unmarshal(body, &own) != nil {
		t.Fatalf("the tenant's app: %d %s", status, body)
	}
	status, body = api("POST", wire.MasterAPI.RegisterApp.Path(), "s3cret", wire.AppDescription{Name: "ops", Command: []string{"true"}, MaxCores: 1, MemoryPerExecutorMB: 64, Detached: true})
	var ops wire.Submitted
	if status != http.StatusOK || json.Unmarshal(body, &ops) != nil {
		t.Fatalf("the operator's app: %d %s", status, body)
	}

	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, cookie string, form url.Values) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp, string(out)
	}
	resp, _ := do("POST", "/ui/sign-in", "", url.Values{"token": {token + "x"}})
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("a wrong tenant token signs in: %d", resp.StatusCode)
	}
	resp, _ = do("POST", "/ui/sign-in", "", url.Values{"token": {token}, "next": {"/ui/apps/" + own.ID}})
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("the tenant's sign-in: %d %v", resp.StatusCode, resp.Cookies())
	}
	cookie := resp.Cookies()[0].Value

	if resp, page := do("GET", "/ui/apps/"+own.ID, cookie, nil); resp.StatusCode != http.StatusOK || !strings.Contains(page, "mine") || strings.Contains(page, "Kill application") {
		t.Errorf("its own app's page: %d %s", resp.StatusCode, page)
	}
	_, others := do("GET", "/ui/apps/"+ops.ID, cookie, nil)
	resp, none := do("GET", "/ui/apps/app-20200101000000-9999", cookie, nil)
	if resp.StatusCode != http.StatusForbidden || strings.ReplaceAll(others, ops.ID, "ID") != strings.ReplaceAll(none, "app-20200101000000-9999", "ID") {
		t.Errorf("the operator's app and none are answered apart:\n%s\n%s", others, none)
	}
	if resp, page := do("GET", "/ui/", cookie, nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "needs an operator") {
		t.Errorf("the overview for a tenant: %d %s", resp.StatusCode, page)
	}
	csrf := strings.SplitN(strings.SplitN(others, `name="csrf" value="`, 2)[1], `"`, 2)[0]
	if resp, _ := do("POST", "/ui/act", cookie, url.Values{"kind": {"kill-app"}, "id": {own.ID}, "csrf": {csrf}, "confirm": {"yes"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a kill by the tenant's session: %d", resp.StatusCode)
	}

	// Deleted, the tenant's session is no session; its sign-out, before,
	// is the tenant's in the audit log.
	resp, _ = do("POST", "/ui/sign-in", "", url.Values{"token": {token}})
	second := resp.Cookies()[0].Value
	if resp, _ := do("POST", "/ui/sign-out", cookie, url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the tenant's sign-out: %d", resp.StatusCode)
	}
	if status, body := api("DELETE", wire.MasterAPI.DeleteTenant.Path("acme"), "s3cret", nil); status != http.StatusOK {
		t.Fatalf("deleting the tenant: %d %s", status, body)
	}
	for name, c := range map[string]string{"signed out": cookie, "of a deleted tenant": second} {
		if resp, _ := do("GET", "/ui/apps/"+own.ID, c, nil); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a session %s: %d, want the sign-in", name, resp.StatusCode)
		}
	}
	audited, held := false, false
	engine.Read(t.Context(), func(s *persistence.State) {
		for key := range s.EndedSessions {
			held = held || strings.HasPrefix(key, "acme/") // its holder's bound counts it (sessions_ended.go)
		}
		for _, e := range s.Audit {
			audited = audited || e.Route == wire.MasterAPI.EndUISession.Mux() && e.Principal == "tenant:acme" && e.Tenant == "acme"
		}
	})
	if !held {
		t.Error("the tenant's sign-out is not kept as acme's")
	}
	if !audited {
		t.Error("the tenant's sign-out is not in the audit log as the tenant's")
	}
}

type httpStatus struct {
	status int
	body   string
}

func (e *httpStatus) Error() string { return http.StatusText(e.status) + ": " + e.body }
