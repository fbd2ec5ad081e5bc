package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

var (
	// ErrUnauthorized: the master refused the secret.
	ErrUnauthorized = errors.New("the master refused the secret (check --secret or BERTH_SECRET)")
	// ErrUnknownOutcome: a write gave up (retry budget or context) after an
	// attempt that may have reached the master (a 504, a timeout, a
	// connection dropped mid-request), so it may or may not have been done.
	// Every write but CreateTenant is safe to repeat: a submission with
	// the same idempotency key (WithIdempotencyKey) gets the first one's
	// id.
	ErrUnknownOutcome = errors.New("outcome unknown: the master may or may not have processed the request")
)

// StatusCode returns the HTTP status the master answered with, if err wraps
// one, else 0.
func StatusCode(err error) int {
	var se *httpx.StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// request is one API call. Every request but those marked once is safe to
// repeat: reads, writes whose effect does not change when done twice, and
// submissions under an idempotency key.
type request struct {
	method, path string
	in           any
	// once: repeating it after an attempt that may have reached a master
	// could do it twice (CreateTenant mints a token each time), so such an
	// attempt's failure ends the call with ErrUnknownOutcome.
	once bool
	// leaderOnly: only the leader answers it with a 2xx (writes, the event
	// stream), so whoever does is the leader.
	leaderOnly bool
	// budget bounds the retries; 0 takes the client's retry budget.
	budget time.Duration
	// header is sent with every attempt (an idempotency key).
	header http.Header
}

// on is a request for endpoint e (its path parameters filled) with body in
// (nil for none).
func on(e wire.Endpoint, in any, params ...string) request {
	return request{method: e.Method, path: e.Path(params...), in: in}
}

// call runs r and decodes a 2xx answer into out (if not nil).
func (c *Client) call(ctx context.Context, r request, out any) error {
	resp, cancel, err := c.roundTrip(ctx, r, false)
	if err != nil {
		return err
	}
	defer cancel()
	return httpx.ReadAnswer(resp, out, r.method, r.path)
}

// open runs r and returns the open 2xx response for the caller to read (a
// stream, logs). Only connecting and the headers are time-bounded.
func (c *Client) open(ctx context.Context, r request) (*http.Response, error) {
	resp, _, err := c.roundTrip(ctx, r, true)
	return resp, err
}

// roundTrip sends r to the leader, discovering it as it goes, and returns
// the first 2xx response. Unless stream is set, each attempt is bounded by
// the request timeout through a context that the returned cancel releases
// once the body has been read.
func (c *Client) roundTrip(ctx context.Context, r request, stream bool) (*http.Response, context.CancelFunc, error) {
	budget := r.budget
	if budget <= 0 {
		budget = c.retryBudget
	}
	start := time.Now()
	deadline := start.Add(budget)
	target := c.target()
	backoff := c.minBackoff
	redirects := 0
	var lastErr error // the last failure that was not our own context's
	unknown := false  // a write attempt may have reached the master
	// broken: masters this call leaves out, for what retrying cannot fix
	// (failfast.go); down: the run of attempts that reached no master.
	broken := map[string]*ConfigError{}
	var down outage
	// quorumless: masters that answered no_quorum in this call; gone:
	// those unreachable at their last attempt. Once every master is one
	// or the other (or broken), no leader can be had: the call ends.
	quorumless, gone := map[string]bool{}, map[string]bool{}
	var noQuorum error // the last no_quorum answer
	// silent: masters that did not answer a probe (silent.go), asked of
	// all by a client that has reached none yet, and of the others once
	// an attempt of the call goes unanswered; and those suspect already.
	var silent map[string]bool
	probed := false
	if !stream {
		if !c.reached.Load() {
			silent, probed = c.probe(ctx, c.masters), true
		} else {
			silent = c.suspects()
		}
		target = c.answering(target, silent, quorumless, gone, broken)
	}
	for attempt := 1; ; attempt++ {
		var actx context.Context
		var cancel context.CancelFunc
		var opening *time.Timer
		if stream {
			// Only the wait for the headers is bounded: the stream lives on.
			actx, cancel = context.WithCancel(ctx)
			opening = time.AfterFunc(c.streamOpenTimeout, cancel)
		} else {
			actx, cancel = context.WithTimeout(ctx, c.requestTimeout)
		}
		resp, err := c.api.OpenWith(actx, r.method, target+r.path, r.in, r.header)
		if opening != nil && !opening.Stop() && ctx.Err() == nil {
			// No headers in time (or just as the timer fired, and the
			// stream is cut already): the master is frozen or cut off.
			if err == nil {
				resp.Body.Close()
			}
			err = fmt.Errorf("%s %s%s: no answer within %s: %w", r.method, target, r.path, c.streamOpenTimeout, context.DeadlineExceeded)
		}
		if err == nil {
			c.reached.Store(true)
			if r.leaderOnly || r.method != http.MethodGet {
				c.setLeader(target)
			}
			return resp, cancel, nil
		}
		cancel()
		if ctx.Err() != nil {
			return nil, nil, c.gaveUp(ctx, r, lastErr, err, unknown)
		}
		lastErr = err
		unknown = unknown || mayHaveReached(r, err)
		if r.once && unknown {
			var se *httpx.StatusError
			if errors.As(err, &se) { // a transport error names the request already
				err = fmt.Errorf("%s %s%s: %w", r.method, target, r.path, se)
			}
			return nil, nil, fmt.Errorf("%w (not repeated: a repeat could do it twice): %w", ErrUnknownOutcome, err)
		}
		var se *httpx.StatusError
		answered := errors.As(err, &se)
		if answered {
			c.reached.Store(true)
		}
		down.add(target, err, answered)
		switch {
		case answered && se.Code == wire.CodeNoQuorum:
			quorumless[target], noQuorum = true, fmt.Errorf("%s %s%s: %w", r.method, target, r.path, se)
		case !answered && unreachable(err):
			gone[target] = true
		default:
			delete(gone, target)
		}
		switch {
		case answered:
			delete(silent, target)
		case !stream && !probed && !unreachable(err):
			// No answer at all (frozen, or cut off): which of the others
			// answer, before the next is sent the request?
			silent, probed = union(c.probe(ctx, c.others(target)), silent), true
			silent[target] = true
		}
		if c.noQuorumAnywhere(quorumless, union(gone, silent), broken) {
			return nil, nil, c.notDone(r, noQuorum, unknown)
		}

		var next string
		wait := false
		if ce := configProblem(target, err); !answered && ce != nil {
			// Retrying cannot fix it: leave this master out of the call,
			// and fail at once if that leaves none.
			broken[target] = ce
			next = c.nextUsable(target, false, broken)
		} else {
			next, wait, err = c.classify(r, target, err)
			if next == "" {
				if unknown && !errors.Is(err, ErrUnknownOutcome) {
					// An earlier attempt may have done it all the same.
					err = fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
				}
				return nil, nil, err
			}
			if broken[next] != nil {
				next = c.nextUsable(next, false, broken)
			}
			if quorumless[next] {
				// The next in turn said no quorum already: ask one this call
				// has not heard from, even if an earlier call found it
				// unreachable, rather than ask the same master again until
				// that mark expires (3 s of berth kill without a quorum).
				if m := c.unasked(quorumless, gone, broken); m != "" {
					next = m
				}
			}
			next = c.answering(next, silent, quorumless, gone, broken)
		}
		if next == "" {
			return nil, nil, c.allBroken(r, broken, unknown)
		}
		if c.hopeless(&down, broken) {
			return nil, nil, c.notDone(r, &NoMasterError{Refused: down.refused, Waited: time.Since(start)}, unknown)
		}
		if wait {
			redirects = 0
		} else if redirects++; redirects > 2*len(c.masters)+2 {
			// Masters keep pointing at each other: an election is under way
			// and their views are stale. Pause like after a 503.
			wait, redirects = true, 0
		}
		if time.Now().After(deadline) {
			return nil, nil, c.outOfBudget(r, budget, attempt, err, unknown)
		}
		c.log.Debug("retrying", "method", r.method, "path", r.path, "next", next, "err", err)
		if wait {
			if sleep(ctx, jitter(backoff), deadline) != nil {
				return nil, nil, c.gaveUp(ctx, r, lastErr, nil, unknown)
			}
			backoff = min(2*backoff, c.maxBackoff)
			if !time.Now().Before(deadline) {
				// The pause took what was left: an attempt begun now
				// would be cut short, its outcome unknown.
				return nil, nil, c.outOfBudget(r, budget, attempt, err, unknown)
			}
		}
		target = next
	}
}

// outOfBudget is the error of a call whose retry budget ran out after
// attempt attempts, the last failing with err.
func (c *Client) outOfBudget(r request, budget time.Duration, attempt int, err error, unknown bool) error {
	err = fmt.Errorf("%s %s: no master could serve it within %s (%d attempts): %w",
		r.method, r.path, budget, attempt, err)
	return c.notDone(r, err, unknown)
}

// notDone marks err, the end of a call, with what is known of a write's
// outcome: unknown when an attempt may have reached a master, else
// certainly not done (ErrNotDone). A read's error is left as it is.
func (c *Client) notDone(r request, err error, unknown bool) error {
	switch {
	case unknown:
		return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	case r.method != http.MethodGet:
		return fmt.Errorf("%w: %w", ErrNotDone, err)
	}
	return err
}

// allBroken is the error of a call that found every master broken: the
// first master's problem (they are usually the same).
func (c *Client) allBroken(r request, broken map[string]*ConfigError, unknown bool) error {
	for _, m := range c.masters {
		if ce := broken[m]; ce != nil {
			return c.notDone(r, ce, unknown)
		}
	}
	for _, ce := range broken {
		return c.notDone(r, ce, unknown)
	}
	return c.notDone(r, errors.New("no usable master"), unknown)
}

// gaveUp explains why ctx ended the call: with the last failure seen, more
// telling than the context error of the attempt it cut short.
func (c *Client) gaveUp(ctx context.Context, r request, lastErr, cutErr error, unknown bool) error {
	if lastErr == nil {
		lastErr = cutErr
	}
	var err error
	if lastErr == nil {
		err = fmt.Errorf("%s %s: %w", r.method, r.path, ctx.Err())
	} else {
		err = fmt.Errorf("%s %s: %w (last error: %v)", r.method, r.path, ctx.Err(), lastErr)
	}
	return c.notDone(r, err, unknown || (cutErr != nil && mayHaveReached(r, cutErr)))
}

// mayHaveReached reports whether a failed write attempt may have been
// processed by the master: it answered 504, or the request may have been
// sent before the connection failed.
func mayHaveReached(r request, err error) bool {
	if r.method == http.MethodGet {
		return false
	}
	var se *httpx.StatusError
	if errors.As(err, &se) {
		return se.Status == http.StatusGatewayTimeout
	}
	return !preSend(err)
}

// classify decides what to do after err from target: the master to try next
// ("" to give up and return the error) and whether to pause first.
func (c *Client) classify(r request, target string, err error) (next string, wait bool, out error) {
	where := fmt.Sprintf("%s %s%s", r.method, target, r.path)
	var se *httpx.StatusError
	if errors.As(err, &se) {
		switch {
		case se.Status == http.StatusTemporaryRedirect && (se.Leader != "" || se.Location != ""):
			leader, perr := leaderBase(se, target, r.path)
			if perr != nil {
				return "", false, fmt.Errorf("%s: redirected to a bad leader address %q: %w", where, se.Leader+se.Location, perr)
			}
			if leader == target {
				return c.failed(target, false), true, err
			}
			c.redirectedTo(leader)
			return leader, false, err
		case se.Code == wire.CodeNoLeader || se.Code == wire.CodeLeaderPreparing || se.Code == wire.CodeNoQuorum:
			// The master held the request while it waited for a leader
			// (up to a second): that was the pause; ask the next at once.
			return c.failed(target, false), false, err
		case se.Status == http.StatusTemporaryRedirect || se.Status == http.StatusServiceUnavailable:
			// No leader known yet (an election): another master may know.
			return c.failed(target, false), true, err
		case se.Status == http.StatusUnauthorized:
			return "", false, fmt.Errorf("%s: %w: %w", where, c.unauthorized(), se)
		case se.Status == http.StatusGatewayTimeout:
			// The master lost leadership before it learned whether the
			// write committed; repeating it is harmless, and the next
			// leader knows the outcome.
			return c.failed(target, false), true, err
		}
		// Any other answer is final, 5xx included: the master's log proxy
		// says 502 when the worker is unreachable, which another master
		// would only repeat.
		return "", false, fmt.Errorf("%s: %w", where, se)
	}
	// No answer (refused, reset, timed out): the master is dead, frozen or
	// cut off. Try it after the others for a while, and do not follow a
	// follower's redirect to it (followers name a dead leader until their
	// heartbeat timeout).
	return c.failed(target, true), true, err
}

// notSent reports whether err certainly happened before the request reached
// the master: no connection was made.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// jitter spreads d over [d/2, d) so that clients that lost the same master do
// not all come back at the same instant.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, or less if deadline comes first, or until ctx is done.
func sleep(ctx context.Context, d time.Duration, deadline time.Time) error {
	if !poll.Sleep(ctx, min(d, max(time.Until(deadline), 0))) {
		return ctx.Err()
	}
	return nil
}
