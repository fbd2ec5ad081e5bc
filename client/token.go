package client

import "errors"

// WithToken makes the client call the masters with token instead of the
// operator secret: a tenant's token (wire.TenantTokenPrefix, from
// CreateTenant) or a driver's credential (wire.EnvToken). It is sent as
// the secret is, "Authorization: Bearer TOKEN"; New refuses a secret and a
// token together, since the master would take only one of them.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// bearer is the credential New sends: the secret or the token, never both.
func bearer(secret, token string) (string, error) {
	if secret != "" && token != "" {
		return "", errors.New("client: a secret and a token: give one (a token acts for its tenant or driver, the secret for an operator)")
	}
	if token != "" {
		return token, nil
	}
	return secret, nil
}

// tokenRefused is ErrUnauthorized for a client that sends a token: its
// text points at the token, not at the secret it did not send.
type tokenRefused struct{}

func (tokenRefused) Error() string {
	return "the master refused the token (check --token or BERTH_TOKEN: a tenant's lasts until the tenant is deleted, a driver's while the driver runs)"
}

func (tokenRefused) Is(target error) bool { return target == ErrUnauthorized }

// unauthorized is the error of a 401: the credential this client sends
// was refused.
func (c *Client) unauthorized() error {
	switch {
	case c.token != "":
		return tokenRefused{}
	case !c.sendsSecret && !c.hasClientCert():
		return noCredential{tls: c.tls != nil}
	case !c.sendsSecret:
		return certRefused{}
	}
	return ErrUnauthorized
}

// hasClientCert reports whether the client presents a certificate.
func (c *Client) hasClientCert() bool {
	return c.tls != nil && (len(c.tls.Certificates) > 0 || c.tls.GetClientCertificate != nil)
}

// noCredential is ErrUnauthorized for a client that sent nothing to prove
// who it is: no secret, no token, no client certificate (a CA alone
// verifies the masters, it proves nothing of the client).
type noCredential struct{ tls bool }

func (e noCredential) Error() string {
	if e.tls {
		return "this client sent no credential: it has the CA (--tls-ca-file) but no client certificate (--tls-cert-file and --tls-key-file, a cli certificate: berth tls cert create --role cli) and no secret (--secret-file or BERTH_SECRET)"
	}
	return "this client sent no credential: give the operator secret (--secret-file or BERTH_SECRET) or a tenant's token (--token)"
}

func (noCredential) Is(target error) bool { return target == ErrUnauthorized }

// certRefused is ErrUnauthorized for a client that sent a certificate
// and no secret.
type certRefused struct{}

func (certRefused) Error() string {
	return "the master did not take this client's certificate as an operator's (want a cli certificate of the cluster's CA: --tls-cert-file, --tls-key-file)"
}

func (certRefused) Is(target error) bool { return target == ErrUnauthorized }
