package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/credentials"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// clientCredentials is what berth calls the masters with: an operator's cli
// certificate and/or the operator secret, or, inside a driver, the
// driver's credential (wire.EnvToken). --tls-ca-file alone verifies the
// masters without presenting a certificate.
func clientCredentials(c *cli.Context) (string, []client.Option, error) {
	if ca := c.String("tls-ca-file"); ca != "" && c.String("tls-cert-file") == "" && c.String("tls-key-file") == "" {
		cfg, err := client.MasterTLS(ca)
		if err != nil {
			return "", nil, fmt.Errorf("--tls-ca-file: %w", err)
		}
		secret, err := secretOnly(c)
		return secret, []client.Option{client.WithTLS(cfg)}, err
	}
	creds, err := credentials.FromFlags(c, security.RoleCLI)
	if err != nil {
		return "", nil, err
	}
	var opts []client.Option
	if creds.TLS != nil {
		opts = append(opts, client.WithTLS(creds.ClientTLS(security.RoleMaster)))
	}
	if creds.Secret == "" {
		creds.Secret = os.Getenv(wire.EnvToken)
	}
	return creds.Secret, opts, nil
}

// secretOnly reads --secret or --secret-file, else the driver's credential.
func secretOnly(c *cli.Context) (string, error) {
	if path := c.String("secret-file"); path != "" {
		s, err := credentials.ReadSecretFile(path)
		if err != nil {
			return "", fmt.Errorf("--secret-file: %w", err)
		}
		return s, nil
	}
	if s := c.String("secret"); s != "" {
		return s, nil
	}
	return os.Getenv(wire.EnvToken), nil
}
