package e2e

// UI.md's Firefox steps for a TLS cluster's UI, followed in a real
// headless Firefox that checks certificates against its own profile's
// store: the master's certificate refused before the CA is imported, the
// sign-in page once it is, and, with an operator's cli certificate
// imported as the PKCS #12 file UI.md makes, the overview without signing
// in (the browser presents the certificate).

import (
	"strings"
	"testing"
	"time"
)

func TestUIOfATLSClusterInFirefox(t *testing.T) {
	t.Parallel()
	cl, base := uiTLSCluster(t, "firefox-esr")
	profile := t.TempDir()
	shellStep(t, "certutil", "-d", "sql:"+profile, "-N", "--empty-password") // as a first start makes it
	// "Select Automatically": the choice a person makes in the prompt, once.
	prefs := map[string]any{"security.default_personal_cert": "Select Automatically"}

	// Before step 1: the certificate is refused, nothing of the UI shows.
	ff := startFirefox(t, profile, prefs)
	address, text, err := ff.open(base + "/ui/")
	if err == nil || !strings.Contains(err.Error(), "SEC_ERROR_UNKNOWN_ISSUER") || strings.Contains(text, "Sign in") {
		t.Fatalf("opening %s/ui/ before the CA is trusted: %v, at %s:\n%s\nwant the certificate refused (SEC_ERROR_UNKNOWN_ISSUER)", base, err, address, text)
	}
	// What the person sees: Firefox's warning page for a bad certificate
	// (its text is in the page's shadow DOM, which innerText does not read).
	ff.until("certificate warning", 20*time.Second, func(address, _ string) bool {
		return strings.HasPrefix(address, "about:certerror?e=nssBadCert")
	})
	ff.screenshot("ui-tls-firefox-untrusted")
	ff.close()

	// Step 1 by UI.md's shell command, Firefox closed; then the sign-in page.
	trustCA(t, cl, profile)
	ff = startFirefox(t, profile, prefs)
	text = ff.openServed("once the CA is trusted", base, base+"/ui/")
	mustContain(t, "Firefox's page once the CA is trusted", text, "Sign in")
	ff.screenshot("ui-tls-firefox-trusted")
	ff.close()

	// Step 2 by a cli certificate: UI.md's openssl and pk12util commands.
	importOperatorCertificate(t, cl, profile)
	ff = startFirefox(t, profile, prefs)
	text = ff.openServed("with the operator's certificate", base, base+"/ui/")
	if strings.Contains(text, "Sign in") {
		t.Fatalf("Firefox with the operator's certificate was asked to sign in:\n%s", text)
	}
	mustContain(t, "the overview to Firefox's certificate", text, "w1", "Sign out")
	ff.screenshot("ui-tls-firefox-certificate")
	ff.close()
}
