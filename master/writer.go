package master

import (
	"context"
	"log/slog"
	"time"

	"github.com/berth-cluster/berth/persistence"
)

// proposal is a write the loop wants durable, with what to run after.
type proposal struct {
	cmds []persistence.Command
	then func(error)
}

// writer applies proposals through the engine in order, off the loop. What
// queued up while a write was in flight goes out as the next single write
// (group commit): one fsync, or one Raft entry, for many changes.
type writer struct {
	engine  persistence.Engine
	queue   *mailbox[proposal]
	done    func(func(*core)) // posts a continuation to the loop
	timeout time.Duration
	log     *slog.Logger
}

// maxBatch bounds the commands of one write, so one entry stays small.
const maxBatch = 512

func (w *writer) run(ctx context.Context) {
	var pending []proposal
	for {
		if len(pending) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.queue.ready():
				pending = w.queue.take()
				continue
			}
		}
		n, count := 0, 0
		for n < len(pending) && (n == 0 || count+len(pending[n].cmds) <= maxBatch) {
			count += len(pending[n].cmds)
			n++
		}
		batch := pending[:n]
		pending = pending[n:]
		var cmds []persistence.Command
		for _, p := range batch {
			cmds = append(cmds, p.cmds...)
		}
		wctx, cancel := context.WithTimeout(ctx, w.timeout)
		err := w.engine.Write(wctx, cmds)
		cancel()
		if err != nil {
			w.log.Warn("persistence write failed", "commands", len(cmds), "err", err)
		}
		w.done(func(*core) {
			for _, p := range batch {
				p.then(err)
			}
		})
		if len(pending) == 0 {
			pending = w.queue.take()
		}
	}
}
