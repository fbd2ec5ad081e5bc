package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Client calls a berth API with the cluster secret. It never follows
// redirects by itself: a redirect from a follower comes back as a 307
// StatusError carrying the leader, and the caller decides (Go's own client
// would drop the Authorization header on the way to another host).
type Client struct {
	HTTP   *http.Client
	Secret string
}

// NewClient returns a Client whose requests time out after timeout (0: none,
// for streams; use a context instead).
func NewClient(secret string, timeout time.Duration) *Client {
	return &Client{
		Secret: secret,
		HTTP: &http.Client{
			Timeout: timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}
}

// Do sends in (if not nil) as JSON to url and decodes a 2xx answer into out
// (if not nil). Any other answer is a *StatusError with the server's reason.
func (c *Client) Do(ctx context.Context, method, url string, in, out any) error {
	resp, err := c.Open(ctx, method, url, in)
	if err != nil {
		return err
	}
	return ReadAnswer(resp, out, method, url)
}

// ReadAnswer decodes the body of a 2xx answer to method url into out and
// closes it; with out nil it reads the body away, so that the connection
// is used again.
func ReadAnswer(resp *http.Response, out any, method, url string) error {
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decoding answer: %w", method, url, err)
	}
	return nil
}

// Open sends the request and returns the response when it is 2xx, for callers
// that read the body themselves (streams, logs). The caller closes the body.
func (c *Client) Open(ctx context.Context, method, url string, in any) (*http.Response, error) {
	return c.OpenWith(ctx, method, url, in, nil)
}

// OpenWith is Open with extra request headers (nil for none).
func (c *Client) OpenWith(ctx context.Context, method, url string, in any, header http.Header) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encoding request: %w", method, url, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	for k, vs := range header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Secret != "" {
		req.Header.Set("Authorization", "Bearer "+c.Secret)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	if resp.TLS != nil {
		// A pooled connection was checked when dialled; one dialled for
		// another request to the same address is checked here.
		if err := checkPeer(ctx, *resp.TLS); err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("%s %s: %w", method, url, err)
		}
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readStatusError(resp)
}

// readStatusError turns a non-2xx response into a StatusError.
func readStatusError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	se := &StatusError{Status: resp.StatusCode}
	var body wire.Error
	if json.Unmarshal(data, &body) == nil && body.Error != "" {
		se.Message, se.Leader, se.Code = body.Error, body.Leader, body.Code
	} else {
		se.Message = string(bytes.TrimSpace(data))
	}
	se.Location = resp.Header.Get("Location")
	return se
}

// WithIdlePool makes c keep up to total idle connections, perHost to any one
// server, for a client that talks to many servers in turn (the master to its
// workers): Go's default pool keeps 100 in all, so past 100 busy workers
// every command would open a new connection. It returns c.
func (c *Client) WithIdlePool(total, perHost int) *Client {
	tr := c.transport()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = total, perHost
	c.HTTP.Transport = tr
	return c
}

// transport is a copy of c's transport to change (Go's default one if c
// has none of its own), so the With... options add up.
func (c *Client) transport() *http.Transport {
	if old, ok := c.HTTP.Transport.(*http.Transport); ok {
		return old.Clone()
	}
	return http.DefaultTransport.(*http.Transport).Clone()
}
