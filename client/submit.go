package client

import (
	"crypto/rand"
	"encoding/hex"
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
