package client

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Frozen masters. A master stopped with SIGSTOP (or on a host that drops
// packets) is not refused: the kernel takes the connection and the
// request, and nothing ever answers, so each write sent to it waited the
// whole request timeout (10 s). With two of three masters frozen and the
// third saying no_quorum at once, berth submit took its whole --timeout
// (30.8 s) and berth kill app more (36.3 s), ending on the frozen
// master's timeout rather than the no-quorum answer; reads too (berth
// status took 10 s). So a client that has reached no master yet asks each
// for /healthz at once, with probeTimeout, before its first request, and a
// call whose attempt got no answer asks the others before the next: one
// that does not answer is silent, and suspect for a while (the next call
// knows). A silent master is tried only when no other is left, and a
// master's no_quorum with every other silent, gone or broken ends a
// write: nothing was sent to the silent ones in that call, so it is
// certainly not done (exit 3 in the CLI), within about probeTimeout.

// probeTimeout bounds a liveness probe: a running master answers
// /healthz in a millisecond (it reads nothing, waits for nothing).
const probeTimeout = time.Second

// probe is silentMasters, which the client then suspects for suspectFor
// (tried after the others, by this call and the next: berth kill app
// reads the app, then kills it).
func (c *Client) probe(ctx context.Context, masters []string) map[string]bool {
	silent := c.silentMasters(ctx, masters)
	c.mu.Lock()
	defer c.mu.Unlock()
	until := time.Now().Add(suspectFor)
	for m := range silent {
		c.suspect[m] = until
	}
	return silent
}

// suspects is the masters suspect now: they did not answer a request or a
// probe within the last suspectFor.
func (c *Client) suspects() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	out := map[string]bool{}
	for m, until := range c.suspect {
		if now.Before(until) {
			out[m] = true
		}
	}
	return out
}

// silentMasters asks each of masters for /healthz at once and returns
// those that gave no answer (of any status) within probeTimeout.
func (c *Client) silentMasters(ctx context.Context, masters []string) map[string]bool {
	var mu sync.Mutex
	silent := map[string]bool{}
	var wg sync.WaitGroup
	for _, m := range masters {
		wg.Go(func() {
			if !c.answers(ctx, m) {
				mu.Lock()
				silent[m] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return silent
}

// answers reports whether master m answers /healthz within probeTimeout.
func (c *Client) answers(ctx context.Context, m string) bool {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// On a connection of its own: a write sent on a connection the probe
	// opened, which then broke, would be repeated by the transport itself
	// (a request with an idempotency key may be), unseen by the call.
	resp, err := c.api.OpenWith(pctx, http.MethodGet, m+wire.MasterAPI.Health.Path(), nil, http.Header{"Connection": {"close"}})
	if err != nil {
		var se *httpx.StatusError
		return errors.As(err, &se) // an answer, if not a 2xx
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	return true
}

// answering is target, or if target is silent, the first master after it
// that is not silent and has neither said no_quorum nor been found gone
// or broken in this call; target when there is none (a silent master may
// only be slow: it is still asked, with the whole request timeout).
func (c *Client) answering(target string, silent, quorumless, gone map[string]bool, broken map[string]*ConfigError) string {
	if !silent[target] {
		return target
	}
	start := slices.Index(c.masters, target)
	for i := range len(c.masters) {
		m := c.masters[(start+1+i)%len(c.masters)]
		if !silent[m] && !quorumless[m] && !gone[m] && broken[m] == nil {
			return m
		}
	}
	return target
}

// others is the masters but m.
func (c *Client) others(m string) []string {
	var out []string
	for _, x := range c.masters {
		if x != m {
			out = append(out, x)
		}
	}
	return out
}

// union is the masters in a or b.
func union(a, b map[string]bool) map[string]bool {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]bool{}
	}
	for m, ok := range b {
		if ok {
			out[m] = true
		}
	}
	return out
}
