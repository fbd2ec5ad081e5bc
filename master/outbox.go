package master

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// outbox delivers commands to workers: each worker gets its commands in
// order, one at a time, and at most maxDeliverers workers are being sent
// to at once, by as many goroutines, which take the workers with commands
// in turn. A slow or dead worker holds up one deliverer, not the others;
// and a new leader's Reconnect to 100,000 workers costs a few hundred
// goroutines, not one per worker. Dropping the outbox (leadership lost)
// cancels everything in flight at once: a deposed leader sends nothing
// more.
type outbox struct {
	client *httpx.Client
	log    *slog.Logger
	failed func(workerID string, cmd workerCommand, err error) // posts to the loop

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	queues  map[string]*workerQueue
	ready   []*workerQueue // queues with commands that no deliverer has, first come first
	running int            // deliverers of ctx
}

// workerQueue is one worker's commands not sent yet.
type workerQueue struct {
	id, address string
	cmds        []workerCommand
	held        bool // in ready or with a deliverer
}

// maxDeliverers bounds the workers sent to at once (and the connections
// to workers the master keeps busy).
const maxDeliverers = 256

// Delivery retries: a worker restarting or a brief network blip is retried;
// a worker that stays unreachable is the heartbeat timeout's business.
var outboxRetryDelays = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, time.Second}

func newOutbox(client *httpx.Client, log *slog.Logger, failed func(string, workerCommand, error)) *outbox {
	o := &outbox{client: client, log: log, failed: failed}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.queues = map[string]*workerQueue{}
	return o
}

// send queues cmd for the worker at address.
func (o *outbox) send(workerID, address string, cmd workerCommand) {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queues[workerID]
	if q == nil || q.address != address {
		q = &workerQueue{id: workerID, address: address}
		o.queues[workerID] = q
	}
	q.cmds = append(q.cmds, cmd)
	if !q.held {
		q.held = true
		o.ready = append(o.ready, q)
		if o.running < maxDeliverers {
			o.running++
			go o.deliver(o.ctx)
		}
	}
}

// drop discards every queued command and stops every delivery.
func (o *outbox) drop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancel()
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.queues = map[string]*workerQueue{}
	o.ready, o.running = nil, 0
}

// close stops the outbox for good.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancel()
}

// deliver is one deliverer: it takes the first worker with commands, sends
// them in order, puts the worker back at the end if more came meanwhile,
// and ends when no worker waits (or the outbox was dropped).
func (o *outbox) deliver(ctx context.Context) {
	for {
		o.mu.Lock()
		if ctx.Err() != nil {
			o.mu.Unlock()
			return // dropped: the new outbox counts its own deliverers
		}
		if len(o.ready) == 0 {
			o.running--
			o.mu.Unlock()
			return
		}
		q := o.ready[0]
		o.ready[0] = nil
		o.ready = o.ready[1:]
		cmds := q.cmds
		q.cmds = nil
		o.mu.Unlock()

		for _, cmd := range cmds {
			if err := o.post(httpx.ExpectPeer(ctx, q.id), q.address, cmd); err != nil {
				if ctx.Err() != nil {
					return
				}
				o.failed(q.id, cmd, err)
			}
		}

		o.mu.Lock()
		switch {
		case ctx.Err() != nil:
			o.mu.Unlock()
			return // dropped meanwhile: q belongs to no outbox now
		case len(q.cmds) > 0:
			o.ready = append(o.ready, q) // more came: after the others
		case o.queues[q.id] == q:
			delete(o.queues, q.id) // nothing left: forget it until the next command
		}
		q.held = len(q.cmds) > 0
		o.mu.Unlock()
	}
}

// post sends one command, retrying transport failures and 5xx. A 409 means
// the worker has seen a newer epoch: this master was deposed, and retrying
// cannot help.
func (o *outbox) post(ctx context.Context, address string, cmd workerCommand) error {
	ep := cmd.kind.endpoint()
	url := strings.TrimSuffix(address, "/") + ep.Path()
	var err error
	for attempt := 0; ; attempt++ {
		err = o.client.Do(ctx, ep.Method, url, cmd.body, nil)
		var se *httpx.StatusError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &se) && se.Code == wire.CodeStaleEpoch:
			o.log.Error("worker refused a command with a stale epoch: a newer leader exists", "url", url, "reason", se.Message)
			return err
		case errors.As(err, &se) && se.Status < 500:
			o.log.Warn("worker rejected a command", "url", url, "status", se.Status, "reason", se.Message)
			return err
		}
		if attempt >= len(outboxRetryDelays) || cmd.kind == cmdReconnect {
			// A Reconnect is a hint: a worker that misses it finds the
			// leader when its next heartbeat fails.
			return err
		}
		if !poll.Sleep(ctx, outboxRetryDelays[attempt]) {
			return ctx.Err()
		}
	}
}
