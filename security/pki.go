// Package security is berth's transport security: the cluster's own CA,
// certificates that carry a role (master, worker, cli), and the TLS
// configurations that check them.
package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/regularfile"
)

// Role is what a certificate may do in the cluster.
type Role string

const (
	RoleMaster Role = "master" // Raft peer, leader of workers
	RoleWorker Role = "worker" // registers and reports as the worker id it is named
	RoleCLI    Role = "cli"    // an operator: may do everything
)

// rolePrefix marks the certificate's role in its subject's
// OrganizationalUnit: "berth:master". It is signed by the CA, so a holder
// cannot change it.
const rolePrefix = "berth:"

// Validity of what CreateCA and CreateCert make.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	CertValidity = 365 * 24 * time.Hour
)

// ParseRole reads a role name.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleMaster, RoleWorker, RoleCLI:
		return r, nil
	}
	return "", fmt.Errorf("%q: want master, worker or cli", s)
}

// CreateCA writes dir/ca.pem (0644) and dir/ca-key.pem (0600): a new
// self-signed ECDSA P-256 CA, valid for CAValidity (10 years: replacing a
// CA means reissuing every certificate). It creates dir (0700) if missing
// and never overwrites a file: a second CA would split the cluster.
func CreateCA(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "berth cluster CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("signing the CA: %w", err)
	}
	return writePair(dir, "ca", der, key)
}

var (
	safeName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)
	dnsLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`)
)

// CheckName checks a certificate name: it becomes a file name in the CA's
// directory, so no path separators, no hidden files, and not the CA's own.
func CheckName(name string) error {
	if !safeName.MatchString(name) || name == "ca" || name == "ca-key" || len(name) > 64 {
		return fmt.Errorf("%q: want 1-64 of A-Z a-z 0-9 . _ -, not starting with a dot, and not \"ca\"", name)
	}
	return nil
}

// CheckHost checks a host for a certificate's SANs: an IP address or a DNS
// name. Anything else ("host:port", a URL) would be written as a DNS name
// that no client ever matches, and fail only at the first handshake.
func CheckHost(host string) error {
	if net.ParseIP(host) != nil {
		return nil
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	ok := len(host) <= 253
	for _, l := range labels {
		ok = ok && len(l) <= 63 && dnsLabel.MatchString(l)
	}
	if !ok {
		return fmt.Errorf("%q: want an IP address or a DNS name", host)
	}
	return nil
}

// CreateCert writes dir/NAME.pem (0644) and dir/NAME-key.pem (0600): a
// certificate of role for name (its CN), valid for CertValidity (1 year),
// for both server and client authentication, with hosts (IP addresses or
// DNS names; blanks are skipped) as its SANs, signed by the CA in dir. It
// never overwrites a file.
func CreateCert(dir string, role Role, name string, hosts []string) error {
	if _, err := ParseRole(string(role)); err != nil {
		return fmt.Errorf("role %w", err)
	}
	if err := CheckName(name); err != nil {
		return fmt.Errorf("name %w", err)
	}
	var ips []net.IP
	var dns []string
	for _, h := range hosts {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if err := CheckHost(h); err != nil {
			return fmt.Errorf("host %w", err)
		}
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	caCert, caKey, err := readCA(dir)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, OrganizationalUnit: []string{rolePrefix + string(role)}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(CertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing %s: %w", name, err)
	}
	return writePair(dir, name, der, key)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) // never fails
	return n
}

// readCA reads dir/ca.pem and dir/ca-key.pem.
func readCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	// Read as regular files within a bound: a FIFO named ca.pem hung
	// `berth tls cert create`, a link to /dev/zero fed it without end.
	certPEM, err := regularfile.Read(filepath.Join(dir, "ca.pem"), maxPEMFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the CA (make one with berth tls ca create --dir %s): %w", dir, err)
	}
	keyPEM, err := regularfile.Read(filepath.Join(dir, "ca-key.pem"), maxPEMFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the CA's key: %w", err)
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "ca.pem"), err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, nil, fmt.Errorf("%s: no PEM block", filepath.Join(dir, "ca-key.pem"))
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "ca-key.pem"), err)
	}
	return cert, key, nil
}

func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// writePair writes name.pem and name-key.pem into dir, refusing to replace
// either. A pair is written whole or not at all, so that a failed run can
// simply be repeated.
func writePair(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the directory: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the key: %w", err)
	}
	certPath, keyPath := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s exists: not overwriting it", p)
		}
	}
	if err := writeNew(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	if err := writeNew(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		os.Remove(keyPath)
		return err
	}
	return nil
}

// writeNew creates path with data; O_EXCL refuses a file that appeared
// since the check in writePair. A partly written file is removed.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: not overwriting it", path)
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
