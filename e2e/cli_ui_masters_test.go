package e2e

// berth ui (a one-time sign-in link to the web UI, for a browser without
// a certificate in its store) and berth master join|leave (issue 24),
// with the real binaries.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
)

// A TLS cluster without an operator secret: the only way into its UI was
// a cli certificate in the browser. berth ui, run with the operator's
// certificate, prints a link; a browser with neither certificate nor
// secret opens it, posts its code, and is signed in; the code works once.
// A session cookie forged with the key every secret-less master used to
// derive from the empty secret gets nothing.
func TestCLIUISignInLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dumpLogsOnFailure(t, dir)
	// One master, TLS and no secret (the harness's clusters all have one).
	api, err := testcluster.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tlsFlags, err := bin.PKI.MasterFlags("m1", "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", api)
	p, err := testcluster.Start(t, "master-m1", bin.Master, filepath.Join(dir, "master-m1.log"),
		append([]string{"--node-id", "m1", "--host", "127.0.0.1", "--port", strconv.Itoa(api), "--data-dir", filepath.Join(dir, "m1")}, tlsFlags...),
		testcluster.ProcOptions{Env: []string{"BERTH_SECRET=", "BERTH_SECRET_FILE="}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := testcluster.WaitHealthy(t.Context(), p, base, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	r := runBerth(t, append(append([]string{"--master", base}, bin.PKI.Flags("operator")...), "ui")...)
	link := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(link, base+"/ui/sign-in?code=") || !strings.Contains(r.stderr, "open it within") {
		t.Fatalf("berth ui: %s", r)
	}

	// A browser: trusts the CA (it would warn otherwise), has no
	// certificate, keeps cookies, follows no redirect by itself.
	tr, err := bin.PKI.Transport()
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Transport: tr, Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string, string) {
		t.Helper()
		resp, err := browser.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(body)
	}
	if code, loc, _ := get(base + "/ui/"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/sign-in") {
		t.Fatalf("the UI before signing in: %d → %q, want the sign-in page", code, loc)
	}
	code, _, page := get(link)
	u, _ := url.Parse(link)
	linkCode := u.Query().Get("code")
	if code != http.StatusOK || !strings.Contains(page, `name="code" value="`+linkCode+`"`) || !strings.Contains(page, "Sign in with this link") {
		t.Fatalf("opening the link: %d\n%s", code, page)
	}
	post := func(form url.Values) (int, string, string) {
		t.Helper()
		resp, err := browser.PostForm(base+"/ui/sign-in", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(body)
	}
	if code, loc, body := post(url.Values{"code": {linkCode}, "next": {"/ui/"}}); code != http.StatusSeeOther || loc != "/ui/" {
		t.Fatalf("posting the link's code: %d → %q\n%s", code, loc, body)
	}
	if code, _, body := get(base + "/ui/"); code != http.StatusOK || !strings.Contains(body, "m1") {
		t.Fatalf("the UI once signed in: %d\n%.500s", code, body)
	}
	// Once only.
	other, _ := cookiejar.New(nil)
	browser.Jar = other
	if code, _, body := post(url.Values{"code": {linkCode}, "next": {"/ui/"}}); code != http.StatusUnauthorized || !strings.Contains(body, "berth ui") {
		t.Errorf("the code again: %d\n%.300s", code, body)
	}
	// A session forged with the key of the empty secret.
	browser.Jar = nil
	req, _ := http.NewRequest(http.MethodGet, base+"/ui/", nil)
	req.AddCookie(&http.Cookie{Name: "berth_session", Value: forgedSession()})
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session forged with the empty secret's key: %d, want the sign-in page", resp.StatusCode)
	}
}

// forgedSession is a UI session as httpx.UISessions made them for a
// master without a secret before: signed with a key anyone can derive.
func forgedSession() string {
	k := hmac.New(sha256.New, nil)
	k.Write([]byte("berth ui session v2\x00masters"))
	key := k.Sum(nil)
	payload := make([]byte, 16+8)
	rand.Read(payload[:16])
	binary.BigEndian.PutUint64(payload[16:], uint64(time.Now().Add(time.Hour).Unix()))
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	enc := base64.RawURLEncoding
	return "s1." + enc.EncodeToString(payload) + "." + enc.EncodeToString(m.Sum(nil))
}

// berth master join adds a master started with --raft-addr alone, and
// berth master leave removes it, each sent to a follower (which
// redirects to the leader); a master started with --join (the README's
// way) leaves the same way.
func TestCLIMasterJoinAndLeave(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, nil)
	leader, _ := hc.leader(10 * time.Second)
	follower := hc.others(leader)[0]
	viaFollower := operatorArgs(follower.URL)

	// m4: empty data directory, --raft-addr, no --peers, no --join: it
	// waits to be added.
	ip := "127.0.0.4"
	api, err := testcluster.FreePort(ip)
	if err != nil {
		t.Fatal(err)
	}
	raftPort, err := testcluster.FreePort(ip)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsFlags, err := bin.PKI.MasterFlags("m4", ip, 0)
	if err != nil {
		t.Fatal(err)
	}
	m4URL := fmt.Sprintf("https://%s:%d", ip, api)
	raftAddr := fmt.Sprintf("%s:%d", ip, raftPort)
	args := append([]string{"--node-id", "m4", "--host", ip, "--port", strconv.Itoa(api), "--data-dir", filepath.Join(dir, "m4"),
		"--raft-addr", raftAddr, "--secret-file", secretFile}, tlsFlags...)
	p, err := testcluster.Start(t, "master-m4", bin.Master, filepath.Join(dir, "master-m4.log"), args, testcluster.ProcOptions{Env: []string{"BERTH_SECRET="}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := testcluster.WaitHealthy(t.Context(), p, m4URL, 15*time.Second); err != nil {
		t.Fatal(err)
	}

	r := runBerth(t, append(viaFollower, "master", "join", "m4", "--raft-addr", raftAddr, "--api-addr", m4URL)...)
	if r.code != 0 || !strings.Contains(r.stdout, "master m4 joined") || !strings.Contains(r.stdout, "m4") {
		t.Fatalf("berth master join through follower %s: %s", follower.ID, r)
	}
	testproc.Eventually(t, 20*time.Second, "m4 a reachable voter, and its own view naming the leader", func() error {
		st, err := hc.cliStatus()
		if err != nil {
			return err
		}
		if m, ok := masterIn(st, "m4"); !ok || !m.Voter || m.Reachable == nil || !*m.Reachable || m.APIAddr != m4URL {
			return fmt.Errorf("m4 in the leader's view: %+v (listed %v)", m, ok)
		}
		r := runBerth(t, append(operatorArgs(m4URL), "status", "--json")...)
		if r.code != 0 || !strings.Contains(r.stdout, `"leaderId": "`+leader.ID+`"`) {
			return fmt.Errorf("m4's own status: %s", r)
		}
		return nil
	})
	for _, bad := range [][]string{{"master", "join", "m5"}, {"master", "join", "m5", "--raft-addr", raftAddr}, {"master", "join", "m5", "--raft-addr", raftAddr, "--api-addr", "ftp://x"}} {
		if r := runBerth(t, append(viaFollower, bad...)...); r.code != 1 || !strings.Contains(r.stderr, "--") {
			t.Errorf("berth %v: %s", bad, r)
		}
	}

	r = runBerth(t, append(viaFollower, "master", "leave", "m4")...)
	if now := lineOf(r.stdout, "masters now:"); r.code != 0 || !strings.Contains(r.stdout, "master m4 left") || now == "" || strings.Contains(now, "m4") {
		t.Fatalf("berth master leave m4 through follower %s: %s", follower.ID, r)
	}
	st, err := hc.cliStatus()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := masterIn(st, "m4"); ok {
		t.Errorf("m4 still listed after it left: %+v", st.Masters)
	}

	// The README's way: started with --join, it asks by itself; berth
	// master leave removes it.
	m5, err := hc.Join(5)
	if err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 20*time.Second, "m5 a reachable voter", func() error {
		st, err := hc.cliStatus()
		if err != nil {
			return err
		}
		if m, ok := masterIn(st, m5.ID); !ok || !m.Voter || m.Reachable == nil || !*m.Reachable {
			return fmt.Errorf("m5: %+v (listed %v)", m, ok)
		}
		return nil
	})
	if r := runBerth(t, append(viaFollower, "master", "leave", m5.ID)...); r.code != 0 || !strings.Contains(r.stdout, "master m5 left") {
		t.Errorf("berth master leave m5: %s", r)
	}
}
