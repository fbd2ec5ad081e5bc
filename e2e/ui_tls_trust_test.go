package e2e

// UI.md's steps for opening a TLS cluster's UI in Chromium, as a person
// follows them: without the cluster's CA in its store the browser refuses
// the master's certificate; with it imported by the shell command UI.md
// gives (certutil into $HOME/.pki/nssdb), a browser started after it (as
// a person restarts theirs) opens the sign-in page and signs in with the
// operator secret.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestUIOfATLSClusterOpensOnceTheCAIsTrusted(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"certutil", "chromium"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this test needs %s: run scripts/test-deps.sh: %v", tool, err)
		}
	}
	cl := startCluster(t, clusterSpec{workers: []string{"w1"}, cores: 1, memory: "1g"})
	base := cl.Masters[0].URL
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("the master's address %s: want the TLS cluster's", base)
	}
	home := t.TempDir()
	nssdb := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(nssdb, 0o700); err != nil {
		t.Fatal(err)
	}
	certutil := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "certutil", append([]string{"-d", "sql:" + nssdb}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("certutil %v: %v\n%s", args, err, out)
		}
	}
	certutil("-N", "--empty-password") // the store a first start of Chromium makes

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
	certutil("-A", "-t", "C,,", "-n", "berth-ca", "-i", cl.PKI.CAFile())
	b := newTrustingBrowser(t, home)
	page := b.open(base + "/ui/")
	mustContain(t, "the UI once the CA is trusted", page, "Sign in")
	b.signIn(base)
	mustContain(t, "the overview after the sign-in", b.open(base+"/ui/"), "w1")
	b.screenshot("ui-tls-trusted")
}
