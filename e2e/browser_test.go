package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// The web UI's tests drive a real headless Chromium (Debian's chromium,
// which scripts/test-deps.sh installs) with chromedp, as a person would:
// they sign in, read pages, click buttons and accept the confirmations.

// browser is one headless Chromium for a test. Its certificate errors are
// ignored (the test clusters' CA is the test's own), but for
// newTrustingBrowser's.
type browser struct {
	t     *testing.T
	ctx   context.Context
	close func() // ends the browser (its test's cleanup does too)
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	return startBrowser(t, chromedp.Flag("ignore-certificate-errors", true))
}

// newTrustingBrowser is a browser that checks certificates as a person's
// does, against the NSS store in home/.pki/nssdb (Chromium's on Linux).
func newTrustingBrowser(t *testing.T, home string) *browser {
	t.Helper()
	return startBrowser(t, chromedp.Env("HOME="+home))
}

func startBrowser(t *testing.T, more ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the UI tests need chromium: run scripts/test-deps.sh (apt-get install chromium): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(opts, more...)...)
	ctx, cancel := chromedp.NewContext(actx)
	end := func() { cancel(); cancelAlloc() }
	t.Cleanup(end)
	// Every confirmation is accepted, as the person clicking means it.
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(true))
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx, close: end}
}

// run runs actions with a deadline.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.t.Fatalf("browser, %s: %v", what, err)
	}
}

// click clicks the element sel names once it is visible, as a person
// does. The pages' live refresh replaces their content every 2 seconds, so
// the node found may be gone by the time the mouse is over it (Chromium's
// "Could not find node with given id"): a person's click lands on the new
// button in the same place, and the helper finds it again and clicks that,
// until within. A click that went through is never repeated.
func (b *browser) click(what, sel string, within time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		err := chromedp.Run(ctx, chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.Click(sel, chromedp.ByQuery))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser, %s: %v", what, err)
		}
	}
}

// text is the visible text of the page's body.
func (b *browser) text() string {
	b.t.Helper()
	var s string
	b.run("reading the page", chromedp.Text("body", &s, chromedp.ByQuery))
	return s
}

// open navigates to url and returns the page's text.
func (b *browser) open(url string) string {
	b.t.Helper()
	b.run("opening "+url, chromedp.Navigate(url), chromedp.WaitReady("body", chromedp.ByQuery))
	return b.text()
}

// until reloads url until its text satisfies cond.
func (b *browser) until(url, what string, within time.Duration, cond func(text string) error) string {
	b.t.Helper()
	var last string
	testproc.Eventually(b.t, within, what, func() error {
		last = b.open(url)
		return cond(last)
	})
	return last
}

// signIn signs in on the UI at base with the operator secret, as a person
// types it into the sign-in page it was sent to. A browser keeps cookies
// per host, not per port: where a server on the same host (a worker beside
// a master) was signed in to, the session is valid here already (every
// server of the cluster derives it from the same secret), and no sign-in
// page comes.
func (b *browser) signIn(base string) {
	b.t.Helper()
	var page string
	b.run("opening "+base,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(`a.brand`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('input[name="token"]') ? "sign-in" :
			document.querySelector('form[action="/ui/sign-out"]') ? "signed-in" : "other"`, &page))
	switch page {
	case "signed-in":
		return
	case "other":
		b.t.Fatalf("%s/ui/ is neither the sign-in page nor a signed-in page: %q", base, b.text())
	}
	b.run("signing in at "+base,
		chromedp.SendKeys(`input[name="token"]`, secret, chromedp.ByQuery),
		chromedp.Submit(`input[name="token"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`a.brand`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`input[name="token"]`, chromedp.ByQuery))
}

// screenshot saves the viewport as name.png in the test's directory and,
// when BERTH_UI_SCREENSHOTS names a directory (make screenshots:
// docs/img), there too.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	var png []byte
	b.run("screenshot "+name, chromedp.FullScreenshot(&png, 100))
	saveScreenshot(b.t, name, png)
}

func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	dirs := []string{t.TempDir()}
	if d := os.Getenv("BERTH_UI_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
}

func mustContain(t *testing.T, where, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%s does not show %q", where, p)
		}
	}
}

func wantText(text string, parts ...string) error {
	for _, p := range parts {
		if !strings.Contains(text, p) {
			return fmt.Errorf("no %q yet", p)
		}
	}
	return nil
}
