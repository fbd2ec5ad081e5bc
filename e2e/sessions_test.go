package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// A web UI session ends at its sign-out on every master, the followers
// included, and a copy of its cookie kept from before no longer opens a
// page anywhere; a worker's session is the worker's alone, and ends there.
func TestUISessionsEndEverywhereAtSignOut(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 3, workers: []string{"w1"}, cores: 1, memory: "1g"})
	tr, err := cl.PKI.Transport() // the CA, no client certificate: a browser
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := func(base, cookie string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/ui/", nil)
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := browser.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	form := func(base, path, cookie string, v url.Values) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	signInWith := func(base, token string) string {
		t.Helper()
		resp := form(base, "/ui/sign-in", "", url.Values{"token": {token}})
		cs := resp.Cookies()
		if resp.StatusCode != http.StatusSeeOther || len(cs) != 1 {
			t.Fatalf("sign-in at %s: %d, cookies %v", base, resp.StatusCode, cs)
		}
		return cs[0].Name + "=" + cs[0].Value
	}
	signIn := func(base string) string { t.Helper(); return signInWith(base, secret) }
	signOut := func(base, cookie string) {
		t.Helper()
		code, body := page(base, cookie)
		m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
		// A tenant's overview is refused (403) with the sign-out form.
		if (code != http.StatusOK && code != http.StatusForbidden) || m == nil {
			t.Fatalf("the page to sign out from at %s: %d", base, code)
		}
		if resp := form(base, "/ui/sign-out", cookie, url.Values{"csrf": {m[1]}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-out at %s: %d", base, resp.StatusCode)
		}
	}
	opens := func(base, cookie string) error {
		if code, _ := page(base, cookie); code != http.StatusOK {
			return fmt.Errorf("%s answers the session %d", base, code)
		}
		return nil
	}
	refused := func(base, cookie string) error {
		if code, _ := page(base, cookie); code != http.StatusSeeOther {
			return fmt.Errorf("%s still takes the session: %d", base, code)
		}
		return nil
	}

	leader, _ := cl.leader(20 * time.Second)
	followers := cl.others(leader)
	cookie := signIn(leader.URL)
	for _, m := range cl.Masters {
		testproc.Eventually(t, 10*time.Second, "the session on "+m.ID, func() error { return opens(m.URL, cookie) })
	}
	w1 := cl.worker("w1").URL
	if err := refused(w1, strings.Replace(cookie, "berth_session=", "berth_session_w1=", 1)); err != nil {
		t.Errorf("a master's session on a worker: %v", err)
	}
	// Signed out at a follower: the leader writes the end, every master
	// refuses the copy.
	signOut(followers[0].URL, cookie)
	for _, m := range cl.Masters {
		testproc.Eventually(t, 5*time.Second, "the copied cookie refused by "+m.ID, func() error { return refused(m.URL, cookie) })
	}
	// Audited as the session that signed out, not as anonymous (the
	// leader heard it from a follower).
	if n := auditCount(t, leader.URL, "ui-session", wire.MasterAPI.EndUISession.Mux(), ""); n != 1 {
		t.Errorf("%d audit entries of the sign-out by ui-session, want 1", n)
	}
	// A tenant's session signed out at a follower: audited as the tenant.
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"qa": {}})
	tcookie := signInWith(leader.URL, cl.createTenant(led, "a", "qa"))
	for _, m := range cl.Masters { // taken everywhere first, so that its refusal after says something
		testproc.Eventually(t, 10*time.Second, "the tenant's session on "+m.ID, func() error {
			if code, body := page(m.URL, tcookie); code != http.StatusForbidden || !strings.Contains(body, "signed in as tenant a") {
				return fmt.Errorf("%s answers the tenant's session %d", m.ID, code)
			}
			return nil
		})
	}
	signOut(followers[1].URL, tcookie)
	for _, m := range cl.Masters {
		testproc.Eventually(t, 5*time.Second, "the tenant's copied cookie refused by "+m.ID, func() error { return refused(m.URL, tcookie) })
	}
	if n := auditCount(t, leader.URL, "tenant:a", wire.MasterAPI.EndUISession.Mux(), ""); n != 1 {
		t.Errorf("%d audit entries of the tenant's sign-out at a follower by tenant:a, want 1", n)
	}
	// A new sign-in is a new session, unaffected.
	again := signIn(followers[1].URL)
	if err := opens(leader.URL, again); err != nil {
		t.Error(err)
	}

	wcookie := signIn(w1)
	if !strings.HasPrefix(wcookie, "berth_session_w1=") {
		t.Errorf("the worker's cookie %q, want it named after the worker", wcookie)
	}
	if err := opens(w1, wcookie); err != nil {
		t.Fatal(err)
	}
	if err := refused(leader.URL, strings.Replace(wcookie, "berth_session_w1=", "berth_session=", 1)); err != nil {
		t.Errorf("a worker's session on a master: %v", err)
	}
	signOut(w1, wcookie)
	if err := refused(w1, wcookie); err != nil {
		t.Error(err)
	}
}
