package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/credentials"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// tokenFlag is --token: a tenant's token, or inside a driver the
// driver's credential, which the worker puts in wire.EnvToken.
func tokenFlag() cli.Flag {
	return &cli.StringFlag{Name: "token", EnvVars: []string{wire.EnvToken},
		Usage: "a tenant's `TOKEN` (berth tenant create), sent instead of the secret (prefer the variable: argv is visible); inside a driver, its own credential is there already"}
}

// clientCredentials is what berth calls the masters with: an operator's cli
// certificate and/or the operator secret, or a token (a tenant's, or
// inside a driver the driver's credential). --tls-ca-file alone verifies
// the masters without presenting a certificate.
func clientCredentials(c *cli.Context) (string, []client.Option, error) {
	token := c.String("token")
	if err := tokenAlone(c, token); err != nil {
		return "", nil, err
	}
	var opts []client.Option
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	if ca := c.String("tls-ca-file"); ca != "" && c.String("tls-cert-file") == "" && c.String("tls-key-file") == "" {
		cfg, err := client.MasterTLS(ca)
		if err != nil {
			return "", nil, fmt.Errorf("--tls-ca-file: %w", err)
		}
		secret, err := secretOnly(c)
		return secret, append(opts, client.WithTLS(cfg)), err
	}
	creds, err := credentials.FromFlags(c, security.RoleCLI)
	if err != nil {
		return "", nil, err
	}
	if creds.TLS != nil {
		opts = append(opts, client.WithTLS(creds.ClientTLS(security.RoleMaster)))
	}
	return creds.Secret, opts, nil
}

// tokenAlone refuses a token with an operator's credential: a request
// carries one bearer, the token or the secret, and the master takes a cli
// certificate before either, so one of the two would be dropped silently
// and the command would not act as whom it was meant to.
func tokenAlone(c *cli.Context, token string) error {
	if token == "" {
		return nil
	}
	for _, other := range []string{"secret", "secret-file", "tls-cert-file"} {
		if c.String(other) != "" {
			return fmt.Errorf("--token and --%s (or their BERTH_ variables): give one: the token acts for a tenant or a driver, --%s for an operator", other, other)
		}
	}
	return nil
}

// secretOnly reads --secret or --secret-file.
func secretOnly(c *cli.Context) (string, error) {
	if path := c.String("secret-file"); path != "" {
		s, err := credentials.ReadSecretFile(path)
		if err != nil {
			return "", fmt.Errorf("--secret-file: %w", err)
		}
		return s, nil
	}
	return c.String("secret"), nil
}
