package master

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// outbox delivers commands to workers: each worker gets its commands in
// order, one at a time, and at most maxDeliverers workers are being sent
// to at once, by as many goroutines, which take the workers with commands
// in turn. A worker that fails a command waits for its retry outside the
// pool, so a slow or dead worker holds up one deliverer for one attempt at
// a time (a refused connection: a millisecond), and a new leader's
// Reconnect to 100,000 workers costs a few hundred goroutines and a timer
// per worker that failed, not a goroutine per worker. Dropping the outbox (leadership
// lost) cancels everything in flight at once: a deposed leader sends
// nothing more.
type outbox struct {
	client *httpx.Client
	log    *slog.Logger
	failed func(workerID string, cmd workerCommand, err error) // posts to the loop
	max    int                                                 // maxDeliverers; tests lower it
	delays []time.Duration                                     // outboxRetryDelays; tests lengthen them

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	closed  bool
	queues  map[string]*workerQueue
	ready   []*workerQueue // queues with commands that no deliverer has, first come first
	running int            // deliverers of ctx
}

// workerQueue is one worker's commands not sent yet.
type workerQueue struct {
	id, address string
	cmds        []workerCommand
	held        bool // in ready, with a deliverer, or waiting to retry
	tries       int  // failed attempts of cmds[0] (only its holder touches it)
	// abandon cancels the attempt in flight (nil: none); kicked: it was
	// cancelled by kick, to be sent again at once.
	abandon context.CancelFunc
	kicked  bool
}

// maxDeliverers bounds the workers sent to at once (and the connections
// to workers the master keeps busy).
const maxDeliverers = 256

// Delivery retries: a worker restarting or a brief network blip is retried;
// a worker that stays unreachable is the heartbeat timeout's business.
var outboxRetryDelays = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, time.Second}

func newOutbox(client *httpx.Client, log *slog.Logger, failed func(string, workerCommand, error)) *outbox {
	o := &outbox{client: client, log: log, failed: failed, max: maxDeliverers, delays: outboxRetryDelays}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.queues = map[string]*workerQueue{}
	return o
}

// send queues cmd for the worker at address.
func (o *outbox) send(workerID, address string, cmd workerCommand) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	q := o.queues[workerID]
	if q == nil || q.address != address {
		q = &workerQueue{id: workerID, address: address}
		o.queues[workerID] = q
	}
	q.cmds = append(q.cmds, cmd)
	if !q.held {
		q.held = true
		o.readyLocked(q)
	}
}

// kick abandons the attempt in flight to workerID, which is then sent
// again at once, on a new connection (cancelling a request closes its
// connection): the worker was just heard from, and the attempt may sit
// on a connection whose packets were dropped while the worker was cut
// off, in TCP's retransmission backoff for a second or more.
func (o *outbox) kick(workerID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if q := o.queues[workerID]; q != nil && q.abandon != nil {
		q.kicked = true
		q.abandon()
	}
}

// readyLocked puts q in line and starts a deliverer if the pool has room.
func (o *outbox) readyLocked(q *workerQueue) {
	o.ready = append(o.ready, q)
	if o.running < o.max {
		o.running++
		go o.deliver(o.ctx)
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
	o.closed = true
	o.cancel()
}

// deliver is one deliverer: it takes the first worker in line, sends its
// commands in order, and puts the worker back in line if more came
// meanwhile (or later, if one failed and will be retried). It ends when
// nobody is in line, or when the outbox was dropped.
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

		if sent := o.sendAll(ctx, q, cmds); !sent {
			continue // q waits for its retry (or the outbox was dropped)
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

// sendAll sends cmds to q's worker in order. A command that failed and
// may be retried stops it: what is left goes back in front of q's queue
// and q is put back in line after the retry delay, by a timer, so that no
// deliverer waits meanwhile. It reports whether it got through cmds.
func (o *outbox) sendAll(ctx context.Context, q *workerQueue, cmds []workerCommand) bool {
	for i, cmd := range cmds {
		attempt, abandon := context.WithCancel(ctx)
		o.mu.Lock()
		q.abandon, q.kicked = abandon, false
		o.mu.Unlock()
		retry, err := o.post(httpx.ExpectPeer(attempt, q.id), q.address, cmd)
		o.mu.Lock()
		kicked := q.kicked
		q.abandon, q.kicked = nil, false
		o.mu.Unlock()
		abandon()
		if ctx.Err() != nil {
			return false
		}
		if err != nil && kicked {
			retry, err = o.post(httpx.ExpectPeer(ctx, q.id), q.address, cmd) // at once, on a new connection
			if ctx.Err() != nil {
				return false
			}
		}
		if err != nil && retry && q.tries < len(o.delays) {
			delay := o.delays[q.tries]
			q.tries++
			o.mu.Lock()
			q.cmds = append(slices.Clone(cmds[i:]), q.cmds...)
			o.mu.Unlock()
			time.AfterFunc(delay, func() {
				o.mu.Lock()
				defer o.mu.Unlock()
				if ctx.Err() == nil {
					o.readyLocked(q)
				}
			})
			return false
		}
		q.tries = 0
		if err != nil {
			o.failed(q.id, cmd, err)
		}
	}
	return true
}

// post sends one command. It reports whether a failure may be retried:
// transport failures and 5xx may, but a Reconnect to a worker whose
// address refuses connections (nothing listens: it is gone, or restarting
// and will register by itself); a 409 means the worker has seen a newer
// epoch (this master was deposed), and no other 4xx can succeed later
// either.
func (o *outbox) post(ctx context.Context, address string, cmd workerCommand) (retry bool, err error) {
	url := strings.TrimSuffix(address, "/") + cmd.route.Pattern
	err = cmd.post(ctx, o.client, address)
	var se *httpx.StatusError
	switch {
	case err == nil:
		return false, nil
	case errors.As(err, &se) && se.Code == wire.CodeStaleEpoch:
		o.log.Error("worker refused a command with a stale epoch: a newer leader exists", "url", url, "reason", se.Message)
		return false, err
	case errors.As(err, &se) && (se.Status < 500 || se.Code == wire.CodeDiskFull):
		// disk_full (507): the worker's work dir filled before its
		// heartbeat said so; the launch waits elsewhere (commandFailed).
		o.log.Warn("worker rejected a command", "url", url, "status", se.Status, "reason", se.Message)
		return false, err
	}
	_, reconnect := cmd.body.(wire.Reconnect)
	return !reconnect || !errors.Is(err, syscall.ECONNREFUSED), err
}
