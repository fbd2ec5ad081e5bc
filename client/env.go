package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/berth-cluster/berth/internal/regularfile"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// FromEnv returns what a driver started by a worker calls the masters
// with: its credential (wire.EnvToken, minted by the master for it alone)
// and, on a TLS cluster, the TLS options that verify the masters against
// the cluster's CA (wire.EnvTLSCAFile). Outside a driver both are empty.
func FromEnv() (credential string, opts []Option, err error) {
	credential = os.Getenv(wire.EnvToken)
	if ca := os.Getenv(wire.EnvTLSCAFile); ca != "" {
		cfg, err := MasterTLS(ca)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", wire.EnvTLSCAFile, err)
		}
		opts = append(opts, WithTLS(cfg))
	}
	return credential, opts, nil
}

// MasterTLS is a TLS configuration that trusts the CA in caFile and talks
// only to master certificates of it, presenting none: for a process that
// proves itself with a bearer credential (a driver's) instead.
func MasterTLS(caFile string) (*tls.Config, error) {
	data, err := regularfile.Read(caFile, 1<<20)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return &tls.Config{
		RootCAs:    pool,
		MinVersion: tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			id, err := security.IdentityOf(cs.PeerCertificates[0])
			if err != nil || id.Role != security.RoleMaster {
				return fmt.Errorf("the server's certificate is not a master's (%v)", id.Role)
			}
			return nil
		},
	}, nil
}
