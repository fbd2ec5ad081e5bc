package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/berth-cluster/berth/wire"
)

// SubmitOption tunes RegisterApp and SubmitDriver.
type SubmitOption func(*submitOptions)

type submitOptions struct{ key string }

// WithIdempotencyKey sets the key that makes a submission safe to repeat
// (wire.IdempotencyKeyHeader): a repeat with the same key, from this process
// or another, gets the id of the first instead of creating another. Without
// it each call makes up a fresh key, which makes its own retries safe.
func WithIdempotencyKey(key string) SubmitOption {
	return func(o *submitOptions) { o.key = key }
}

// NewIdempotencyKey returns a random key (128 bits, hex).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}

// submit sends a submission on route r under its idempotency key and
// returns the id the master gave (or had given to a repeat of it); what
// names the call in errors.
func submit[Req any](ctx context.Context, c *Client, r wire.Route[Req, wire.Submitted], desc Req, opts []SubmitOption, what string) (string, error) {
	var sub wire.Submitted
	if err := c.call(ctx, submitRequest(r.Endpoint, desc, opts), &sub); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return sub.ID, nil
}

// onEntity runs a route about one app or driver, named by id, and returns
// its answer; what names the call in errors.
func onEntity[Resp any](ctx context.Context, c *Client, r wire.Route[wire.None, Resp], what, id string) (Resp, error) {
	var out Resp
	if err := c.call(ctx, on(r.Endpoint, nil, id), &out); err != nil {
		return out, fmt.Errorf("%s %s: %w", what, id, err)
	}
	return out, nil
}

// submitRequest is the POST of a submission under its idempotency key,
// which makes it as safe to retry as any other request.
func submitRequest(e wire.Endpoint, in any, opts []SubmitOption) request {
	o := submitOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.key == "" {
		o.key = NewIdempotencyKey()
	}
	r := on(e, in)
	r.header = http.Header{wire.IdempotencyKeyHeader: {o.key}}
	return r
}
