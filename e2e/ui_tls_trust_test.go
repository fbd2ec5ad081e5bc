package e2e

// UI.md's steps for opening a TLS cluster's UI in Chromium, as a person
// follows them: without the cluster's CA in its store the browser refuses
// the master's certificate; with it imported by the shell command UI.md
// gives (certutil into $HOME/.pki/nssdb), a browser started after it (as
// a person restarts theirs) opens the sign-in page and signs in with the
// operator secret; with an operator's cli certificate imported as UI.md
// says, Chromium presents it and shows the overview without a sign-in.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestUIOfATLSClusterOpensOnceTheCAIsTrusted(t *testing.T) {
	t.Parallel()
	cl, base := uiTLSCluster(t, "chromium")
	home := t.TempDir()
	nssdb := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(nssdb, 0o700); err != nil {
		t.Fatal(err)
	}
	shellStep(t, "certutil", "-d", "sql:"+nssdb, "-N", "--empty-password") // the store a first start of Chromium makes

	// Before step 1: the certificate is refused, nothing of the UI shows.
	untrusting := newTrustingBrowser(t, home)
	ctx, cancel := context.WithTimeout(untrusting.ctx, 30*time.Second)
	err := chromedp.Run(ctx, chromedp.Navigate(base+"/ui/"))
	cancel()
	if err == nil || !strings.Contains(err.Error(), "ERR_CERT_AUTHORITY_INVALID") {
		t.Fatalf("opening %s/ui/ before the CA is trusted: %v; want the certificate refused (ERR_CERT_AUTHORITY_INVALID)", base, err)
	}
	untrusting.close() // closed, as a person's before the import

	// Step 1 by UI.md's command, then a new Chromium (it reads the store
	// at start); step 2 with the secret on the sign-in page.
	trustCA(t, cl, nssdb)
	b := newTrustingBrowser(t, home)
	page := b.open(base + "/ui/")
	mustContain(t, "the UI once the CA is trusted", page, "Sign in")
	b.signIn(base)
	mustContain(t, "the overview after the sign-in", b.open(base+"/ui/"), "w1")
	b.screenshot("ui-tls-trusted")
	b.close()

	// Step 2 by a cli certificate instead: UI.md's openssl and pk12util
	// commands, then the pick a person makes when Chromium asks which
	// certificate to present, as the policy that makes it for a machine
	// (AutoSelectCertificateForUrls, for this master's origin only).
	if os.Geteuid() != 0 {
		t.Skip("Chromium's certificate step sets a machine-wide policy, which needs root (as CI runs)")
	}
	importOperatorCertificate(t, cl, nssdb)
	chromiumPolicy(t, map[string]any{"AutoSelectCertificateForUrls": []string{
		fmt.Sprintf(`{"pattern":%q,"filter":{"ISSUER":{"CN":"berth cluster CA"}}}`, base)}})
	b = newTrustingBrowser(t, home)
	page = b.open(base + "/ui/")
	if strings.Contains(page, "Sign in") {
		t.Fatalf("Chromium with the operator's certificate was asked to sign in:\n%s", page)
	}
	mustContain(t, "the overview to Chromium's certificate", page, "w1", "Sign out")
	b.screenshot("ui-tls-certificate")
}

// chromiumPolicy sets a managed policy of Debian's Chromium (read at its
// start) for the rest of the test; it needs root, as CI runs. A test run
// killed before its cleanup (a -timeout panic, SIGKILL) leaves its file:
// the next run removes those of processes that are gone.
func chromiumPolicy(t *testing.T, policy map[string]any) {
	t.Helper()
	dir := "/etc/chromium/policies/managed"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("Chromium's policy directory (this step needs root): %v", err)
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "berth-e2e-*.json"))
	for _, f := range stale {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(f), "berth-e2e-%d.json", &pid); err == nil && pid > 0 &&
			syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.Remove(f)
		}
	}
	data, err := json.Marshal(policy)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, fmt.Sprintf("berth-e2e-%d.json", os.Getpid()))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatalf("Chromium's policy (this step needs root): %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(file) })
}
