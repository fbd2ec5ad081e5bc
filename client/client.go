// Package client talks to a berth cluster's masters: it finds the leader,
// rides out failovers and exposes the master API (wire/client.go) as methods.
//
// Several masters replicate their state with Raft and only the leader accepts
// writes. A Client therefore remembers the last leader it reached, follows a
// follower's 307 to the leader (keeping the secret, which Go's own redirect
// handling would drop), and on a connection error or a 503 ("no leader yet")
// moves on to the next master with a jittered backoff, for up to a retry
// budget (30 s by default) so that a failover of a few seconds is invisible
// to callers.
//
// Retrying is only safe when a repeated request cannot do harm:
//
//   - Reads (GET) may be answered by any master, a follower included (see
//     wire.ClusterStatus.View); they are retried after any transport error.
//   - Idempotent writes (kill, unregister, heartbeat, executor limit, kill
//     executors, join and leave) are retried after any transport error and
//     after a 504 too: doing them twice has the effect of doing them once (a
//     second kill answers the final status).
//   - RegisterApp and SubmitDriver create something, so they are sent with
//     an idempotency key (wire.IdempotencyKeyHeader; random unless the caller
//     gives one with WithIdempotencyKey). The master answers a repeat with the
//     first one's id, on any leader, so these too are retried after any
//     transport error and after a 504 (a leader lost before it learned whether
//     the write committed).
//   - PutQueue replaces a queue's settings and DeleteQueue and DeleteTenant
//     remove something, which a repeat does again or finds gone: they are
//     retried like the idempotent writes (a delete that finds the thing
//     gone after an attempt whose outcome is unknown has succeeded).
//   - CreateTenant is the exception: each success mints a new token,
//     answered once, so it is never repeated after an attempt that may have
//     reached a master; it returns ErrUnknownOutcome instead (see
//     CreateTenant for what to do then). Attempts that certainly reached no
//     master (refused connections, redirects, "no leader yet") are retried.
//   - A write that fails after an attempt that may have reached a master (a
//     504, a timeout, a connection dropped mid-request), because the retry
//     budget ran out or a later answer was final, returns an error wrapping
//     ErrUnknownOutcome: it may have been done. Calling again is safe (with
//     the same key, for a submission), CreateTenant excepted.
//
// Other 4xx answers are never retried; their reason is in the error, which
// wraps the *httpx.StatusError (see StatusCode). A wrong secret or token
// wraps ErrUnauthorized.
package client

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Defaults of the Options.
const (
	DefaultRetryBudget       = 30 * time.Second
	DefaultStreamRetryBudget = 60 * time.Second
	DefaultRequestTimeout    = 10 * time.Second
	// DefaultStreamIdleTimeout bounds the silence on an event stream before
	// the client assumes the connection is dead (a master that vanished
	// without closing its sockets) and reconnects, when the master does
	// not say how soon its next line comes (wire.AppEvent.NextWithinMs);
	// current masters promise one within a second.
	DefaultStreamIdleTimeout = 30 * time.Second
	// DefaultStreamOpenTimeout bounds the wait for a stream's headers: a
	// master that accepts the connection and says nothing is frozen.
	DefaultStreamOpenTimeout = 2 * time.Second
	// suspectFor is how long a master that did not answer (refused,
	// reset, timed out) is tried after the others: long enough to let an
	// election replace a dead or frozen leader, short enough that a master
	// that was restarting is tried again soon.
	suspectFor = 3 * time.Second
)

// Client calls the masters of one cluster. It is safe for concurrent use.
type Client struct {
	masters []string // validated base URLs, no trailing slash
	api     *httpx.Client
	token   string // WithToken's, sent instead of a secret
	log     *slog.Logger
	tls     *tls.Config

	retryBudget       time.Duration
	streamRetryBudget time.Duration
	requestTimeout    time.Duration
	streamIdleTimeout time.Duration
	streamOpenTimeout time.Duration
	minBackoff        time.Duration
	maxBackoff        time.Duration
	// waitForMaster: WithWaitForMaster's (failfast.go); reached: some
	// master has answered this client (an HTTP answer, any status).
	waitForMaster time.Duration
	reached       atomic.Bool
	// sendsSecret: the client sends the operator secret (not a token).
	sendsSecret bool

	mu     sync.Mutex
	leader string // last master known to lead; "" when unknown
	cursor int    // next index into masters when the leader is unknown
	// suspect: masters that did not answer in time (frozen, cut off), and
	// until when they are tried only after the others.
	suspect map[string]time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithRetryBudget bounds the total time one call spends retrying (leader
// discovery, failover); the caller's context can cut it shorter.
func WithRetryBudget(d time.Duration) Option { return func(c *Client) { c.retryBudget = d } }

// WithStreamRetryBudget bounds how long Events keeps trying to reconnect
// after its stream broke before it gives up.
func WithStreamRetryBudget(d time.Duration) Option {
	return func(c *Client) { c.streamRetryBudget = d }
}

// WithRequestTimeout bounds one attempt of one request (and the wait for the
// headers of a stream).
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.requestTimeout = d } }

// WithStreamIdleTimeout sets how long an event stream may stay silent before
// it is considered dead and reconnected.
func WithStreamIdleTimeout(d time.Duration) Option {
	return func(c *Client) { c.streamIdleTimeout = d }
}

// WithStreamOpenTimeout bounds the wait for an event stream's headers.
func WithStreamOpenTimeout(d time.Duration) Option {
	return func(c *Client) { c.streamOpenTimeout = d }
}

// WithBackoff sets the first and the largest pause between retries.
func WithBackoff(first, largest time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = first, largest }
}

// WithTLS makes the client speak TLS with cfg to masters (nil: plain
// HTTP); see credentials.Set.ClientTLS.
func WithTLS(cfg *tls.Config) Option { return func(c *Client) { c.tls = cfg } }

// WithLogger sets where retries and reconnections are logged (debug level;
// failovers at info).
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// New returns a Client for masters, a list of API base URLs such as
// http://10.0.0.1:7077 (wire.ParseMasterURL's rule), calling them with
// secret (empty: no auth, or the token of WithToken).
func New(masters []string, secret string, opts ...Option) (*Client, error) {
	c := &Client{
		log:               slog.New(slog.DiscardHandler),
		retryBudget:       DefaultRetryBudget,
		streamRetryBudget: DefaultStreamRetryBudget,
		requestTimeout:    DefaultRequestTimeout,
		streamIdleTimeout: DefaultStreamIdleTimeout,
		streamOpenTimeout: DefaultStreamOpenTimeout,
		suspect:           map[string]time.Time{},
		minBackoff:        50 * time.Millisecond,
		maxBackoff:        500 * time.Millisecond, // a failover takes about 2 s: look often
	}
	bases, err := wire.ParseMasterURLs("master", strings.Join(masters, ","))
	if err != nil {
		return nil, err
	}
	c.masters = bases
	for _, o := range opts {
		o(c)
	}
	if c.requestTimeout <= 0 || c.streamIdleTimeout <= 0 || c.streamOpenTimeout <= 0 || c.minBackoff <= 0 || c.maxBackoff < c.minBackoff {
		return nil, errors.New("client options: timeouts and backoffs must be positive, and max backoff >= min backoff")
	}
	cred, err := bearer(secret, c.token)
	if err != nil {
		return nil, err
	}
	c.sendsSecret = secret != ""
	c.api = (&httpx.Client{Secret: cred, HTTP: newHTTPClient(c.requestTimeout)}).WithTLS(verifiedTLS(c.tls))
	return c, nil
}

// Masters returns the validated master base URLs.
func (c *Client) Masters() []string { return append([]string(nil), c.masters...) }

// newHTTPClient never follows redirects (the Client does, keeping the
// secret) and bounds the phases of a request that must be quick even on a
// stream: connecting and waiting for the headers.
func newHTTPClient(requestTimeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Connecting to a master that vanished without a RST must not eat the
	// whole retry budget: the next master may be up.
	tr.DialContext = (&net.Dialer{Timeout: min(requestTimeout, 5*time.Second), KeepAlive: 15 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = requestTimeout
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// target returns the master to try first: the remembered leader, else the
// master under the cursor.
func (c *Client) target() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader != "" {
		return c.leader
	}
	return c.masters[c.cursor%len(c.masters)]
}

// setLeader remembers base as the leader, which answered as such.
func (c *Client) setLeader(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader != base {
		c.log.Info("leader found", "master", base)
	}
	c.leader = base
	delete(c.suspect, base)
}

// redirectedTo takes a follower's word that base leads, suspect or not:
// followers stop naming a leader they have not heard from for a few of its
// heartbeats, long before a client notices a silent stream, so the word is
// fresh (a master that refused connections while it restarted may well
// lead again by now).
func (c *Client) redirectedTo(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leader = base
}

// failed forgets base as the leader (it did not answer, or has no leader)
// and returns the next master of the list to try. A master that timed out
// is suspect for a while: the others are tried first, so that one frozen
// master does not cost every retry its timeout.
func (c *Client) failed(base string, timedOut bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == base {
		c.leader = ""
	}
	now := time.Now()
	if timedOut {
		c.suspect[base] = now.Add(suspectFor)
	}
	for i, m := range c.masters {
		if m == base {
			c.cursor = i + 1
			break
		}
	}
	// base may have come from a redirect and not be in the list: then
	// start from the cursor, which has not moved since.
	for range len(c.masters) {
		m := c.masters[c.cursor%len(c.masters)]
		if until, ok := c.suspect[m]; !ok || now.After(until) {
			return m
		}
		c.cursor++
	}
	return c.masters[c.cursor%len(c.masters)] // all suspect: round robin
}
