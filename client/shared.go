package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// The shared cluster (docs/QUEUES.md): queues, tenants and the audit log.

// Queues returns every queue with what it holds and is owed, as the leader
// works them out (a follower redirects: it has no live figures).
func (c *Client) Queues(ctx context.Context) (wire.Queues, error) {
	return leaderRead(ctx, c, wire.MasterAPI.Queues, "list queues")
}

// PutQueue creates queue name or changes its settings: what spec leaves
// out (nil) stays as it is, or takes the master's default for a new queue
// (weight 1, no guarantee, no limit, preemptible). It answers the queue
// once the change is durable. Setting the same settings twice has the
// effect of setting them once, so it is retried like the other
// idempotent writes.
func (c *Client) PutQueue(ctx context.Context, name string, spec wire.QueueSpec) (wire.QueueStatus, error) {
	var out wire.QueueStatus
	if err := c.call(ctx, on(wire.MasterAPI.PutQueue.Endpoint, spec, name), &out); err != nil {
		return out, fmt.Errorf("set queue %s: %w", name, err)
	}
	return out, nil
}

// DeleteQueue removes queue name; the master refuses (409) while it holds
// active apps or drivers, and always for the default queue.
func (c *Client) DeleteQueue(ctx context.Context, name string) error {
	return c.deleteNamed(ctx, wire.MasterAPI.DeleteQueue.Endpoint, "queue", name, wire.CodeUnknownQueue)
}

// Tenants returns the tenants (their tokens are never shown again).
func (c *Client) Tenants(ctx context.Context) (wire.Tenants, error) {
	return leaderRead(ctx, c, wire.MasterAPI.Tenants, "list tenants")
}

// CreateTenant makes tenant name, allowed to submit into spec.Queues, and
// returns its token: the only time anyone sees it (the masters keep its
// hash).
//
// Unlike every other write it is not retried after an attempt that may
// have reached a master (a 504, a timeout, a connection dropped after the
// request went out): a repeat would at best be refused because the tenant
// exists, with the token of the first attempt lost on the way. It then
// returns an error wrapping ErrUnknownOutcome. The tenant may exist
// (Tenants lists it) with a token nobody has: delete it and create it
// again.
func (c *Client) CreateTenant(ctx context.Context, name string, spec wire.TenantSpec) (wire.TenantCreated, error) {
	var out wire.TenantCreated
	r := on(wire.MasterAPI.CreateTenant.Endpoint, spec, name)
	r.once = true
	if err := c.call(ctx, r, &out); err != nil {
		return out, fmt.Errorf("create tenant %s: %w", name, err)
	}
	return out, nil
}

// DeleteTenant removes tenant name: its token stops working on every
// master; what it submitted runs on.
func (c *Client) DeleteTenant(ctx context.Context, name string) error {
	return c.deleteNamed(ctx, wire.MasterAPI.DeleteTenant.Endpoint, "tenant", name, wire.CodeUnknownTenant)
}

// Audit returns the audit log's entries (the state-changing requests and
// who made them), oldest first: those of the last since (0: all the
// masters keep) and, when tenant is not empty, those of that tenant only.
// Any master answers it from its replica.
func (c *Client) Audit(ctx context.Context, since time.Duration, tenant string) (wire.Audit, error) {
	if since < 0 {
		return wire.Audit{}, fmt.Errorf("audit log: since %s: must not be negative", since)
	}
	q := url.Values{}
	if since > 0 {
		q.Set(wire.AuditSinceParam, since.String())
	}
	if tenant != "" {
		q.Set(wire.AuditTenantParam, tenant)
	}
	var out wire.Audit
	r := on(wire.MasterAPI.AuditLog.Endpoint, nil)
	if len(q) > 0 {
		r.path += "?" + q.Encode()
	}
	if err := c.call(ctx, r, &out); err != nil {
		return out, fmt.Errorf("audit log: %w", err)
	}
	return out, nil
}

// leaderRead runs a read that only the leader answers (a follower
// redirects to it), which makes whoever answers the leader to remember.
func leaderRead[Resp any](ctx context.Context, c *Client, route wire.Route[wire.None, Resp], what string) (Resp, error) {
	var out Resp
	r := on(route.Endpoint, nil)
	r.leaderOnly = true
	if err := c.call(ctx, r, &out); err != nil {
		return out, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// ErrGoneAfterRetry is a delete whose repeat found the queue or tenant
// gone after an earlier attempt of unknown outcome: that attempt deleted
// it, or someone else did meanwhile. Either way it is gone; which of the
// two is not known (a caller that counts deletes must not count it).
var ErrGoneAfterRetry = errors.New("gone when the delete was repeated: deleted by an earlier attempt, or by someone else meanwhile")

// deleteNamed deletes the queue or tenant name (kind says which). A
// delete is retried like any idempotent write; when the master answers
// gone (code) after an earlier attempt whose outcome is unknown, it
// returns ErrGoneAfterRetry.
func (c *Client) deleteNamed(ctx context.Context, e wire.Endpoint, kind, name string, gone wire.ErrorCode) error {
	err := c.call(ctx, on(e, nil, name), nil)
	var se *httpx.StatusError
	if errors.Is(err, ErrUnknownOutcome) && errors.As(err, &se) && se.Code == gone {
		c.log.Info("gone when the delete was repeated", kind, name)
		return fmt.Errorf("delete %s %s: %w", kind, name, ErrGoneAfterRetry)
	}
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", kind, name, err)
	}
	return nil
}
