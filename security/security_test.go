package security

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pki makes a CA and one certificate per role in a temp dir.
func pki(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tls")
	if err := CreateCA(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		role Role
		name string
	}{{RoleMaster, "m1"}, {RoleWorker, "w1"}, {RoleCLI, "op"}} {
		if err := CreateCert(dir, c.role, c.name, []string{"127.0.0.1", "localhost"}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func load(t *testing.T, dir, name string) *TLS {
	t.Helper()
	m, err := Load(Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCertificatesCarryTheirRoleAndHosts(t *testing.T) {
	dir := pki(t)
	m := load(t, dir, "m1")
	if got := m.Identity(); got != (Identity{RoleMaster, "m1"}) {
		t.Errorf("identity %+v", got)
	}
	leaf := m.pair.Leaf
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "localhost" {
		t.Errorf("SANs: %v %v", leaf.IPAddresses, leaf.DNSNames)
	}
	if st, err := os.Stat(filepath.Join(dir, "m1-key.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key mode: %v %v", st, err)
	}
	if err := CreateCert(dir, RoleWorker, "m1", []string{"h"}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("overwrite: %v", err)
	}
	if err := CreateCA(dir); err == nil {
		t.Error("CreateCA overwrote the CA")
	}
	for _, name := range []string{"", ".hidden", "a/b", "ca", strings.Repeat("x", 65)} {
		if err := CreateCert(dir, RoleWorker, name, []string{"h"}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if err := CreateCert(dir, "root", "x", nil); err == nil {
		t.Error("role root accepted")
	}
	if err := CreateCert(t.TempDir(), RoleCLI, "x", nil); err == nil || !strings.Contains(err.Error(), "berth tls ca create") {
		t.Errorf("no CA: %v", err)
	}
}

func TestLoadNamesMissingFlagsAndForeignCertificates(t *testing.T) {
	dir := pki(t)
	if m, err := Load(Files{}); m != nil || err != nil {
		t.Errorf("no files: %v %v", m, err)
	}
	_, err := Load(Files{CA: filepath.Join(dir, "ca.pem")})
	if err == nil || !strings.Contains(err.Error(), "--tls-cert-file") || !strings.Contains(err.Error(), "--tls-key-file") {
		t.Errorf("CA only: %v", err)
	}
	other := pki(t)
	_, err = Load(Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(other, "m1.pem"), Key: filepath.Join(other, "m1-key.pem")})
	if err == nil || !strings.Contains(err.Error(), "not of the CA") {
		t.Errorf("another CA's certificate: %v", err)
	}
}

// handshake runs one TLS handshake over loopback between a server and a
// client configuration and returns the client's and the server's errors.
func handshake(t *testing.T, server, client *tls.Config) (error, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		srvErr <- tls.Server(c, server).Handshake()
	}()
	client = client.Clone()
	client.ServerName = "127.0.0.1"
	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err == nil {
		// TLS 1.3 reports the server's refusal of the client's certificate
		// on the first read.
		_, err = c.Read(make([]byte, 1))
		if err != nil && strings.Contains(err.Error(), "EOF") {
			err = nil
		}
		c.Close()
	}
	return err, <-srvErr
}

func TestHandshakesCheckCAAndRole(t *testing.T) {
	dir := pki(t)
	m, w, op := load(t, dir, "m1"), load(t, dir, "w1"), load(t, dir, "op")
	foreign := load(t, pki(t), "m1")

	if _, s := handshake(t, m.ServerConfig(tls.RequireAndVerifyClientCert, RoleMaster), m.ClientConfig(RoleMaster)); s != nil {
		t.Errorf("master to master: %v", s)
	}
	for name, c := range map[string]*tls.Config{"worker": w.ClientConfig(), "cli": op.ClientConfig(), "another CA's master": foreign.ClientConfig(),
		"no certificate": {RootCAs: m.pool}} {
		if _, s := handshake(t, m.ServerConfig(tls.RequireAndVerifyClientCert, RoleMaster), c); s == nil {
			t.Errorf("a %s client was accepted by a masters-only server", name)
		}
	}
	// A client that wants a master refuses a worker's server.
	if c, _ := handshake(t, w.ServerConfig(tls.VerifyClientCertIfGiven), m.ClientConfig(RoleMaster)); c == nil {
		t.Error("a client wanting a master accepted a worker's server")
	}
	// VerifyClientCertIfGiven: no certificate passes (a bearer decides),
	// and a given one must verify.
	if _, s := handshake(t, w.ServerConfig(tls.VerifyClientCertIfGiven), &tls.Config{RootCAs: m.pool}); s != nil {
		t.Errorf("no client certificate on an if-given server: %v", s)
	}
	if _, s := handshake(t, w.ServerConfig(tls.VerifyClientCertIfGiven), foreign.ClientConfig()); s == nil {
		t.Error("another CA's certificate accepted")
	}
}
