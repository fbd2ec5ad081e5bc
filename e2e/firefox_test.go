package e2e

// A headless Firefox driven over WebDriver BiDi (Firefox's remote
// protocol: chromedp speaks CDP, which Firefox dropped in release 129),
// for UI.md's Firefox steps. Debian's firefox-esr, which
// scripts/test-deps.sh installs; a profile of the test's own, which is
// where Firefox keeps its certificates (cert9.db) and its preferences.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

type firefox struct {
	t       *testing.T
	exited  chan struct{} // closed once the Firefox process has ended
	conn    net.Conn
	next    int
	context string // the browsing context (its one tab)
}

// firefoxListening is the line Firefox prints once its remote agent listens.
var firefoxListening = regexp.MustCompile(`WebDriver BiDi listening on (ws://127\.0\.0\.1:\d+)`)

// startFirefox starts a headless Firefox on profile, with prefs written
// to its user.js first (what a person sets in Settings or about:config).
func startFirefox(t *testing.T, profile string, prefs map[string]any) *firefox {
	t.Helper()
	path, err := exec.LookPath("firefox-esr")
	if err != nil {
		t.Fatalf("this test needs firefox-esr: run scripts/test-deps.sh: %v", err)
	}
	var js strings.Builder
	for k, v := range prefs {
		b, _ := json.Marshal(v)
		fmt.Fprintf(&js, "user_pref(%q, %s);\n", k, b)
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(js.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-remote", "--profile", profile,
		"--remote-debugging-port", "0", "--remote-allow-hosts", "127.0.0.1")
	cmd.Env = append(os.Environ(), "HOME="+profile, "MOZ_HEADLESS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its content processes end with it
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting firefox: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		// Its content processes, if any outlived it, at once: once its
		// group is empty the number may go to another process's group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited: // quit and reaped: its group is not ours to signal
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its group: the one it leads
			<-exited
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := firefoxListening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var url string
	select {
	case url = <-found:
	case <-exited:
		t.Fatal("firefox ended before its remote agent listened")
	case <-time.After(60 * time.Second):
		t.Fatal("firefox's remote agent did not listen within 60 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, _, err := ws.Dial(ctx, url+"/session")
	if err != nil {
		t.Fatalf("connecting to firefox at %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close() })
	f := &firefox{t: t, exited: exited, conn: conn}
	f.call("session.new", map[string]any{"capabilities": map[string]any{}})
	var tree struct {
		Contexts []struct{ Context string } `json:"contexts"`
	}
	f.decode(f.call("browsingContext.getTree", map[string]any{}), &tree)
	if len(tree.Contexts) == 0 {
		t.Fatal("firefox has no tab")
	}
	f.context = tree.Contexts[0].Context
	return f
}

// call sends one BiDi command and returns its result, failing the test
// on an error answer or no answer within 60 s.
func (f *firefox) call(method string, params any) json.RawMessage {
	f.t.Helper()
	res, err := f.try(method, params)
	if err != nil {
		f.t.Fatalf("firefox %s: %v", method, err)
	}
	return res
}

func (f *firefox) try(method string, params any) (json.RawMessage, error) {
	f.next++
	id := f.next
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	_ = f.conn.SetDeadline(time.Now().Add(60 * time.Second))
	if err := wsutil.WriteClientText(f.conn, msg); err != nil {
		return nil, err
	}
	for {
		data, err := wsutil.ReadServerText(f.conn)
		if err != nil {
			return nil, err
		}
		var ans struct {
			ID      int             `json:"id"`
			Type    string          `json:"type"`
			Result  json.RawMessage `json:"result"`
			Error   string          `json:"error"`
			Message string          `json:"message"`
		}
		if err := json.Unmarshal(data, &ans); err != nil {
			return nil, fmt.Errorf("%s: %w", data, err)
		}
		if ans.ID != id { // an event, or a late answer
			continue
		}
		if ans.Type == "error" {
			return nil, fmt.Errorf("%s: %s", ans.Error, ans.Message)
		}
		return ans.Result, nil
	}
}

func (f *firefox) decode(raw json.RawMessage, v any) {
	f.t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		f.t.Fatalf("firefox's answer %s: %v", raw, err)
	}
}

// open loads url and returns the document's address and its text, as a
// person sees them, or why Firefox did not load it (a certificate refused:
// its error page is then the document).
func (f *firefox) open(url string) (address, text string, err error) {
	f.t.Helper()
	_, err = f.try("browsingContext.navigate", map[string]any{"context": f.context, "url": url, "wait": "complete"})
	address, text = f.page()
	return address, text, err
}

// openServed opens url, which must load (no certificate refused) and stay
// at the master (base), and returns its text.
func (f *firefox) openServed(what, base, url string) string {
	f.t.Helper()
	address, text, err := f.open(url)
	if err != nil || !strings.HasPrefix(address, base) {
		f.t.Fatalf("opening %s %s: %v, at %s:\n%s", url, what, err, address, text)
	}
	return text
}

// until polls the page until cond holds of it, for at most within.
func (f *firefox) until(what string, within time.Duration, cond func(address, text string) bool) {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for {
		address, text := f.page()
		if cond(address, text) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("firefox: no %s within %s; the page is %s:\n%s", what, within, address, text)
		}
		time.Sleep(100 * time.Millisecond) // polling the page: no event says it is drawn
	}
}

func (f *firefox) page() (address, text string) {
	f.t.Helper()
	var got struct {
		Result struct{ Value string } `json:"result"`
	}
	f.decode(f.call("script.evaluate", map[string]any{
		"expression":   `document.documentURI + "\n" + (document.body ? document.body.innerText : "")`,
		"target":       map[string]any{"context": f.context},
		"awaitPromise": false,
	}), &got)
	address, text, _ = strings.Cut(got.Result.Value, "\n")
	return address, text
}

// screenshot saves the viewport as name.png, as browser.screenshot does.
func (f *firefox) screenshot(name string) {
	f.t.Helper()
	var got struct{ Data string }
	f.decode(f.call("browsingContext.captureScreenshot", map[string]any{"context": f.context}), &got)
	png, err := base64.StdEncoding.DecodeString(got.Data)
	if err != nil {
		f.t.Fatalf("screenshot %s: %v", name, err)
	}
	saveScreenshot(f.t, name, png)
}

// close ends Firefox as a person quits it (its profile unlocked, its
// stores written), within 30 s.
func (f *firefox) close() {
	f.t.Helper()
	_, _ = f.try("browser.close", map[string]any{}) // the answer may not come: it quits
	f.conn.Close()
	select {
	case <-f.exited:
	case <-time.After(30 * time.Second):
		f.t.Fatal("firefox did not quit within 30 s of browser.close")
	}
}
