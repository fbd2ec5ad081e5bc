// Package credentials reads what a berth binary proves itself with (the
// operator secret, the cluster's TLS files) from its flags, the same way in
// master, worker and berth.
package credentials

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/regularfile"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// Set is a binary's credentials. The zero Set is the loopback mode.
type Set struct {
	Secret string        // the operator secret, "" for none
	TLS    *security.TLS // nil without TLS
}

// Flags are the TLS and secret-file flags every binary takes (contract:
// names and environment variables are exact).
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "secret-file", EnvVars: []string{wire.EnvSecretFile}, Usage: "file holding the operator secret (keep it 0600; never in argv or a tenant's environment)"},
		&cli.StringFlag{Name: "tls-ca-file", EnvVars: []string{wire.EnvTLSCAFile}, Usage: "the cluster's CA certificate (berth tls ca create); with the two below, every connection is TLS, verified against it"},
		&cli.StringFlag{Name: "tls-cert-file", EnvVars: []string{wire.EnvTLSCertFile}, Usage: "this process's certificate of the cluster's CA (berth tls cert create)"},
		&cli.StringFlag{Name: "tls-key-file", EnvVars: []string{wire.EnvTLSKeyFile}, Usage: "the key of --tls-cert-file"},
	}
}

// FromFlags reads the credentials: --secret (where the binary has it) or
// --secret-file, and the TLS files. A certificate whose role is not want
// is refused (no check when want is empty).
func FromFlags(cx *cli.Context, want security.Role) (Set, error) {
	var s Set
	s.Secret = cx.String("secret")
	if path := cx.String("secret-file"); path != "" {
		if s.Secret != "" {
			return s, errors.New("--secret and --secret-file: give one")
		}
		secret, err := ReadSecretFile(path)
		if err != nil {
			return s, fmt.Errorf("--secret-file: %w", err)
		}
		s.Secret = secret
	}
	t, err := security.Load(security.Files{CA: cx.String("tls-ca-file"), Cert: cx.String("tls-cert-file"), Key: cx.String("tls-key-file")})
	if err != nil {
		return s, err
	}
	if t != nil && want != "" && t.Identity().Role != want {
		return s, fmt.Errorf("--tls-cert-file: a %s certificate, want a %s one (berth tls cert create --role %s)", t.Identity().Role, want, want)
	}
	s.TLS = t
	return s, nil
}

// maxCredentialFile bounds a secret, key or certificate file.
const maxCredentialFile = 1 << 20

// ReadSecretFile reads a secret file: its first line, which must not be
// empty.
func ReadSecretFile(path string) (string, error) {
	data, err := regularfile.Read(path, maxCredentialFile)
	if err != nil {
		return "", err
	}
	secret, _, _ := strings.Cut(string(data), "\n")
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return secret, nil
}

// Scheme is the URL scheme of this process's API: https with TLS.
func (s Set) Scheme() string {
	if s.TLS != nil {
		return "https"
	}
	return "http"
}

// Loopback reports whether no credential is set: the servers then listen
// on loopback only and take every caller for an operator.
func (s Set) Loopback() bool { return s.Secret == "" && s.TLS == nil }

// Listen wraps ln in TLS when the set has it: the server presents its
// certificate and verifies any client certificate against the CA (a
// caller without one must then present a bearer credential).
func (s Set) Listen(ln net.Listener) net.Listener {
	if s.TLS == nil {
		return ln
	}
	return tls.NewListener(ln, s.TLS.ServerConfig(tls.VerifyClientCertIfGiven))
}

// ClientTLS is the TLS configuration to call servers of the given roles
// (nil without TLS).
func (s Set) ClientTLS(roles ...security.Role) *tls.Config {
	if s.TLS == nil {
		return nil
	}
	return s.TLS.ClientConfig(roles...)
}
