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

// outbox delivers commands to workers: one goroutine per worker, so each
// worker gets its commands in order and a slow or dead worker holds up no
// other. Dropping the outbox (leadership lost) cancels everything in flight
// at once: a deposed leader sends nothing more.
type outbox struct {
	client *httpx.Client
	log    *slog.Logger
	failed func(workerID string, cmd workerCommand, err error) // posts to the loop

	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	queues map[string]*workerQueue
}

type workerQueue struct {
	address string
	box     *mailbox[workerCommand]
}

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
		q = &workerQueue{address: address, box: newMailbox[workerCommand]()}
		o.queues[workerID] = q
		go o.deliver(o.ctx, workerID, q)
	}
	q.box.put(cmd)
}

// drop discards every queued command and stops every delivery.
func (o *outbox) drop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancel()
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.queues = map[string]*workerQueue{}
}

// close stops the outbox for good.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancel()
}

// idleExit ends a worker's delivery goroutine after this long without
// commands; the next command starts a new one.
const idleExit = time.Minute

func (o *outbox) deliver(ctx context.Context, workerID string, q *workerQueue) {
	idle := time.NewTimer(idleExit)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
			// Idle with nothing queued: end, and forget the queue unless a
			// newer one (the worker came back at a new address) took its
			// place.
			o.mu.Lock()
			if q.box.empty() {
				if o.queues[workerID] == q {
					delete(o.queues, workerID)
				}
				o.mu.Unlock()
				return
			}
			o.mu.Unlock()
			idle.Reset(idleExit)
		case <-q.box.ready():
			for _, cmd := range q.box.take() {
				if err := o.post(httpx.ExpectPeer(ctx, workerID), q.address, cmd); err != nil {
					if ctx.Err() != nil {
						return
					}
					o.failed(workerID, cmd, err)
				}
			}
			idle.Reset(idleExit)
		}
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
		if attempt >= len(outboxRetryDelays) {
			return err
		}
		if !poll.Sleep(ctx, outboxRetryDelays[attempt]) {
			return ctx.Err()
		}
	}
}
