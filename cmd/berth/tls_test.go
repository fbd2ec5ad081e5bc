package main

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/testkit/testproc"
)

// readCert parses dir/name.pem.
func readCert(t *testing.T, dir, name string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name+".pem"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s.pem: no PEM block", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// The contract of `berth tls`: the files it writes, the role, name and
// hosts in the certificate, and bad flags named.
func TestTLSCommandsWriteTheCAAndRoleCertificates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	run := func(args ...string) testproc.Result {
		t.Helper()
		r := testproc.RunBinary(t, berthBin, nil, args...)
		if r.Code != 0 {
			t.Fatalf("%q: exit %d, stderr %q", args, r.Code, r.Stderr)
		}
		return r
	}
	wrote := func(r testproc.Result, name string) {
		t.Helper()
		for _, f := range []string{name + ".pem", name + "-key.pem"} {
			if !strings.Contains(r.Stdout, filepath.Join(dir, f)) {
				t.Errorf("stdout %q does not name %s", r.Stdout, f)
			}
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
		if st, err := os.Stat(filepath.Join(dir, name+"-key.pem")); err == nil && st.Mode().Perm() != 0o600 {
			t.Errorf("%s-key.pem: mode %v, want 0600", name, st.Mode().Perm())
		}
	}
	wrote(run("tls", "ca", "create", "--dir", dir), "ca")
	wrote(run("tls", "cert", "create", "--dir", dir, "--role", "master", "--name", "m1", "--host", "10.0.1.7, m1.example,::1"), "m1")
	wrote(run("tls", "cert", "create", "--dir", dir, "--role", "worker", "--name", "w7", "--host", "w7.example"), "w7")
	wrote(run("tls", "cert", "create", "--dir", dir, "--role", "cli", "--name", "alice"), "alice")

	ca := readCert(t, dir, "ca")
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for name, role := range map[string]security.Role{"m1": security.RoleMaster, "w7": security.RoleWorker, "alice": security.RoleCLI} {
		cert := readCert(t, dir, name)
		if id, err := security.IdentityOf(cert); err != nil || id != (security.Identity{Role: role, Name: name}) {
			t.Errorf("%s: identity %+v (%v)", name, id, err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s is not of the CA: %v", name, err)
		}
	}
	m1 := readCert(t, dir, "m1")
	if len(m1.IPAddresses) != 2 || !m1.IPAddresses[0].Equal(net.ParseIP("10.0.1.7")) || !m1.IPAddresses[1].Equal(net.IPv6loopback) ||
		!slices.Equal(m1.DNSNames, []string{"m1.example"}) {
		t.Errorf("m1's SANs: IP %v, DNS %v", m1.IPAddresses, m1.DNSNames)
	}
	if alice := readCert(t, dir, "alice"); len(alice.IPAddresses)+len(alice.DNSNames) != 0 {
		t.Errorf("a cli certificate without --host has SANs %v %v", alice.IPAddresses, alice.DNSNames)
	}

	cert := func(args ...string) []string {
		return append([]string{"tls", "cert", "create", "--dir", dir}, args...)
	}
	testproc.CheckBadFlags(t, berthBin, 1, nil, []testproc.BadFlag{
		{Args: []string{"tls", "ca", "create", "--dir", dir}, Flag: filepath.Join(dir, "ca.pem") + " exists"},
		{Args: []string{"tls", "ca", "create"}, Flag: "--dir"},
		{Args: []string{"tls", "ca", "create", "--dir", ""}, Flag: "--dir"},
		{Args: []string{"tls", "ca", "create", "--dir", dir, "extra"}, Flag: "unexpected arguments"},
		{Args: cert("--role", "x", "--name", "x", "--host", "h"), Flag: `--role "x": want master, worker or cli`},
		{Args: cert("--name", "x", "--host", "h"), Flag: "--role"},
		{Args: cert("--role", "master", "--name", "m2"), Flag: "--host"},
		{Args: cert("--role", "worker", "--name", "w8", "--host", " , "), Flag: "--host"},
		{Args: cert("--role", "master", "--name", "m2", "--host", "10.0.1.8:7077"), Flag: `--host "10.0.1.8:7077"`},
		{Args: cert("--role", "cli", "--name", "../up"), Flag: `--name "../up"`},
		{Args: cert("--role", "cli", "--name", ".hidden"), Flag: "--name"},
		{Args: cert("--role", "cli"), Flag: "--name"},
		{Args: cert("--role", "worker", "--name", "w7", "--host", "h"), Flag: filepath.Join(dir, "w7.pem") + " exists"},
		{Args: []string{"tls", "cert", "create", "--dir", t.TempDir(), "--role", "cli", "--name", "x"}, Flag: "berth tls ca create"},
	})
	// The refusals wrote nothing.
	if entries, _ := os.ReadDir(dir); len(entries) != 8 {
		t.Errorf("%d files in %s, want 8 (ca, m1, w7, alice)", len(entries), dir)
	}
}
