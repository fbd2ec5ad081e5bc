package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/berth-cluster/berth/internal/regularfile"
)

// Identity is who a certificate names: its role and its name (CN).
type Identity struct {
	Role Role
	Name string
}

// IdentityOf reads a certificate's berth role and name.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	var roles []Role
	for _, ou := range cert.Subject.OrganizationalUnit {
		if r, ok := strings.CutPrefix(ou, rolePrefix); ok {
			roles = append(roles, Role(r))
		}
	}
	if len(roles) != 1 {
		return Identity{}, fmt.Errorf("certificate %q carries %d berth roles, want 1", cert.Subject.CommonName, len(roles))
	}
	if _, err := ParseRole(string(roles[0])); err != nil {
		return Identity{}, fmt.Errorf("certificate %q: role %w", cert.Subject.CommonName, err)
	}
	return Identity{Role: roles[0], Name: cert.Subject.CommonName}, nil
}

// PeerIdentity is the identity of a connection's verified peer; false if
// the peer presented no certificate that verified.
func PeerIdentity(cs *tls.ConnectionState) (Identity, bool) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return Identity{}, false
	}
	id, err := IdentityOf(cs.VerifiedChains[0][0])
	return id, err == nil
}

// Files names a CA certificate and a certificate and key of it.
type Files struct{ CA, Cert, Key string }

// TLS is a process's TLS material: the cluster's CA and its own key pair.
type TLS struct {
	caFile string
	pool   *x509.CertPool
	pair   tls.Certificate
	self   Identity
}

// Load reads f. All three empty is no TLS (nil, nil); some of them only is
// an error naming the missing flags. The certificate must be of the CA and
// carry a role.
func Load(f Files) (*TLS, error) {
	if f == (Files{}) {
		return nil, nil
	}
	var missing []string
	for _, m := range []struct{ flag, v string }{{"--tls-ca-file", f.CA}, {"--tls-cert-file", f.Cert}, {"--tls-key-file", f.Key}} {
		if m.v == "" {
			missing = append(missing, m.flag)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: TLS needs --tls-ca-file, --tls-cert-file and --tls-key-file together", strings.Join(missing, ", "))
	}
	caPEM, err := regularfile.Read(f.CA, maxPEMFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("--tls-ca-file %s: no PEM certificate", f.CA)
	}
	pair, err := loadKeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", f.Cert, f.Key, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("--tls-cert-file %s: %w", f.Cert, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s is not of the CA in --tls-ca-file: %w", f.Cert, err)
	}
	self, err := IdentityOf(leaf)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s: %w", f.Cert, err)
	}
	return &TLS{caFile: f.CA, pool: pool, pair: pair, self: self}, nil
}

// Identity is this process's own role and name.
func (t *TLS) Identity() Identity { return t.self }

// CAFile is the CA certificate's path, which a worker gives its processes
// so that they can verify the masters.
func (t *TLS) CAFile() string { return t.caFile }

// base is what every configuration shares: TLS 1.3, or 1.2 with ECDHE and
// AEAD suites only (Go's 1.2 defaults minus CBC and RSA key exchange).
func (t *TLS) base() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{t.pair},
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
	}
}

// ServerConfig is a server's configuration: client certificates are
// verified against the CA as clientAuth says and, when roles are given, a
// client certificate of another role fails the handshake.
func (t *TLS) ServerConfig(clientAuth tls.ClientAuthType, roles ...Role) *tls.Config {
	c := t.base()
	c.ClientCAs, c.ClientAuth = t.pool, clientAuth
	c.VerifyConnection = requireRole(roles, false)
	return c
}

// ClientConfig is a client's configuration: it presents its certificate,
// verifies the server's against the CA and, when roles are given, refuses a
// server of another role.
func (t *TLS) ClientConfig(roles ...Role) *tls.Config {
	c := t.base()
	c.RootCAs = t.pool
	c.VerifyConnection = requireRole(roles, true)
	return c
}

// requireRole checks the verified peer's role (nothing when roles is
// empty). A server meets clients that sent no certificate, which its
// ClientAuth decides on.
func requireRole(roles []Role, mustHave bool) func(tls.ConnectionState) error {
	if len(roles) == 0 {
		return nil
	}
	return func(cs tls.ConnectionState) error {
		id, ok := PeerIdentity(&cs)
		if !ok {
			if !mustHave && len(cs.PeerCertificates) == 0 {
				return nil
			}
			return errors.New("the peer's certificate carries no berth role")
		}
		if !slices.Contains(roles, id.Role) {
			return fmt.Errorf("the peer is a %s certificate (%s), want %v", id.Role, id.Name, roles)
		}
		return nil
	}
}

// maxPEMFile bounds a certificate or key file.
const maxPEMFile = 1 << 20

// loadKeyPair is tls.LoadX509KeyPair of regular files only (a FIFO would
// hang the daemon at start).
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := regularfile.Read(certFile, maxPEMFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := regularfile.Read(keyFile, maxPEMFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}
