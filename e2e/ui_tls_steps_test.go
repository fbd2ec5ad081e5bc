package e2e

// UI.md's shell steps for a browser's certificate store (an NSS database:
// Chromium's $HOME/.pki/nssdb, a Firefox profile's cert9.db), shared by
// the Chromium and the Firefox tests, on a TLS test cluster.

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// uiTLSCluster starts a one-worker TLS cluster for a browser test after
// checking the tools UI.md's steps use, and returns it with its master's
// https address.
func uiTLSCluster(t *testing.T, browser string) (*cluster, string) {
	t.Helper()
	for _, tool := range []string{"certutil", "pk12util", "openssl", browser} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this test needs %s: run scripts/test-deps.sh: %v", tool, err)
		}
	}
	cl := startCluster(t, clusterSpec{workers: []string{"w1"}, cores: 1, memory: "1g"})
	base := cl.Masters[0].URL
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("the master's address %s: want the TLS cluster's", base)
	}
	return cl, base
}

// shellStep runs one of UI.md's commands, failing the test with its output.
func shellStep(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// trustCA is step 1's shell command: the cluster's CA into the store at dir.
func trustCA(t *testing.T, cl *cluster, dir string) {
	t.Helper()
	shellStep(t, "certutil", "-d", "sql:"+dir, "-A", "-t", "C,,", "-n", "berth-ca", "-i", cl.PKI.CAFile())
}

// importOperatorCertificate is step 2's by a cli certificate: the
// operator's made into a PKCS #12 file (UI.md's openssl line, with the
// export password given) and imported into the store at dir.
func importOperatorCertificate(t *testing.T, cl *cluster, dir string) {
	t.Helper()
	p12 := filepath.Join(t.TempDir(), "operator.p12")
	pki := cl.PKI.Dir
	shellStep(t, "openssl", "pkcs12", "-export", "-in", filepath.Join(pki, "operator.pem"),
		"-inkey", filepath.Join(pki, "operator-key.pem"), "-certfile", cl.PKI.CAFile(),
		"-name", "operator", "-out", p12, "-passout", "pass:export")
	shellStep(t, "pk12util", "-d", "sql:"+dir, "-i", p12, "-W", "export")
}
