package httpx

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/berth-cluster/berth/security"
)

type peerKey struct{}

// ExpectPeer returns ctx asking a TLS Client to send the request only to a
// server whose certificate is named name: the master talks to a worker only
// if it holds the certificate of the worker id it registered as, so a
// process that took over a worker's address cannot receive its commands
// (and the driver credentials in them).
func ExpectPeer(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, peerKey{}, name)
}

// WithTLS makes c speak TLS with cfg (nil: leave c as it is) and honour
// ExpectPeer. It returns c.
func (c *Client) WithTLS(cfg *tls.Config) *Client {
	if cfg == nil {
		return c
	}
	tr := c.transport()
	tr.TLSClientConfig = cfg
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		conf := cfg.Clone()
		conf.ServerName = host
		conn, err := (&tls.Dialer{NetDialer: dialer, Config: conf}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := checkPeer(ctx, conn.(*tls.Conn).ConnectionState()); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	c.HTTP.Transport = tr
	return c
}

// checkPeer refuses a connection whose server is not the one ctx expects.
func checkPeer(ctx context.Context, cs tls.ConnectionState) error {
	want, _ := ctx.Value(peerKey{}).(string)
	if want == "" {
		return nil
	}
	id, ok := security.PeerIdentity(&cs)
	if !ok || id.Name != want {
		return fmt.Errorf("the server's certificate is %q, not %q's: refusing to talk to it", id.Name, want)
	}
	return nil
}
