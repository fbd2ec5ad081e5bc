package security

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"slices"
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
	for file, mode := range map[string]os.FileMode{".": 0o700, "ca.pem": 0o644, "ca-key.pem": 0o600, "m1.pem": 0o644} {
		if st, err := os.Stat(filepath.Join(dir, file)); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v (%v), want %v", file, st.Mode().Perm(), err, mode)
		}
	}
	if err := CreateCert(dir, RoleWorker, "m1", []string{"h"}); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "m1.pem")+" exists") {
		t.Errorf("overwrite: %v", err)
	}
	if err := CreateCA(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "ca.pem")) {
		t.Errorf("CreateCA over the CA: %v", err)
	}
	for _, name := range []string{"", ".hidden", "a/b", "..", "ca", "ca-key", "a b", strings.Repeat("x", 65)} {
		if err := CreateCert(dir, RoleWorker, name, []string{"h"}); err == nil || !strings.Contains(err.Error(), "name") {
			t.Errorf("name %q: %v", name, err)
		}
	}
	if err := CreateCert(dir, "root", "x", nil); err == nil {
		t.Error("role root accepted")
	}
	if err := CreateCert(t.TempDir(), RoleCLI, "x", nil); err == nil || !strings.Contains(err.Error(), "berth tls ca create") {
		t.Errorf("no CA: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 8 { // ca, m1, w1, op: a refusal writes nothing
		t.Errorf("%d files in the CA's directory, want 8", len(entries))
	}
}

func TestHostsAreIPAddressesOrDNSNames(t *testing.T) {
	dir := pki(t)
	if err := CreateCert(dir, RoleMaster, "m2", []string{"10.0.1.7", " ::1 ", "m2.example.org", "", "node-2"}); err != nil {
		t.Fatal(err)
	}
	leaf := load(t, dir, "m2").pair.Leaf
	if len(leaf.IPAddresses) != 2 || !leaf.IPAddresses[0].Equal(net.ParseIP("10.0.1.7")) || !leaf.IPAddresses[1].Equal(net.IPv6loopback) {
		t.Errorf("IP SANs %v", leaf.IPAddresses)
	}
	if !slices.Equal(leaf.DNSNames, []string{"m2.example.org", "node-2"}) {
		t.Errorf("DNS SANs %v", leaf.DNSNames)
	}
	for _, h := range []string{"10.0.1.7:7077", "https://m2", "a b", "-m2", "m2..example", "*.example", strings.Repeat("a", 64)} {
		if err := CreateCert(dir, RoleMaster, "m3", []string{h}); err == nil || !strings.Contains(err.Error(), "host") {
			t.Errorf("host %q: %v", h, err)
		}
	}
}

func TestIdentityOfWantsExactlyOneBerthRole(t *testing.T) {
	id, err := IdentityOf(&x509.Certificate{Subject: pkix.Name{CommonName: "w1", OrganizationalUnit: []string{"ops", "berth:worker"}}})
	if err != nil || id != (Identity{RoleWorker, "w1"}) {
		t.Errorf("one role: %+v %v", id, err)
	}
	for name, ous := range map[string][]string{"no role": nil, "another OU only": {"ops"},
		"two roles": {"berth:worker", "berth:cli"}, "an unknown role": {"berth:root"}} {
		if id, err := IdentityOf(&x509.Certificate{Subject: pkix.Name{CommonName: "x", OrganizationalUnit: ous}}); err == nil {
			t.Errorf("%s: identity %+v", name, id)
		}
	}
	if _, ok := PeerIdentity(nil); ok {
		t.Error("PeerIdentity(nil) is ok")
	}
	if _, ok := PeerIdentity(&tls.ConnectionState{}); ok {
		t.Error("a peer without a verified certificate has an identity")
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
	// The CA's own certificate verifies, but carries no role.
	ca := Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "ca.pem"), Key: filepath.Join(dir, "ca-key.pem")}
	if _, err := Load(ca); err == nil || !strings.Contains(err.Error(), "berth roles") || !strings.Contains(err.Error(), ca.Cert) {
		t.Errorf("a certificate without a role: %v", err)
	}
	missing := filepath.Join(dir, "nope.pem")
	if _, err := Load(Files{CA: ca.CA, Cert: missing, Key: ca.Key}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing certificate file: %v", err)
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
	// A client that wants a master refuses a server of another role or of
	// another CA; one that wants any role still checks the CA.
	for name, srv := range map[string]*TLS{"worker": w, "cli": op, "another CA's master": foreign} {
		if c, _ := handshake(t, srv.ServerConfig(tls.VerifyClientCertIfGiven), m.ClientConfig(RoleMaster)); c == nil {
			t.Errorf("a client wanting a master accepted a %s server", name)
		}
	}
	if c, _ := handshake(t, foreign.ServerConfig(tls.VerifyClientCertIfGiven), op.ClientConfig()); c == nil {
		t.Error("a client accepted a server of another CA")
	}
	// The filters take several roles: a server for workers and operators.
	for name, c := range map[string]*TLS{"worker": w, "cli": op} {
		if _, s := handshake(t, m.ServerConfig(tls.RequireAndVerifyClientCert, RoleWorker, RoleCLI), c.ClientConfig(RoleMaster)); s != nil {
			t.Errorf("a %s client refused by a worker-or-cli server: %v", name, s)
		}
	}
	if _, s := handshake(t, m.ServerConfig(tls.RequireAndVerifyClientCert, RoleWorker, RoleCLI), m.ClientConfig(RoleMaster)); s == nil {
		t.Error("a master client accepted by a worker-or-cli server")
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
