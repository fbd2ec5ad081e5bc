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
	if c.token != "" {
		return tokenRefused{}
	}
	return ErrUnauthorized
}
