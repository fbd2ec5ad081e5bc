package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-cluster/berth/persistence"
)

// proposal is a write the loop wants durable, with what to run after.
type proposal struct {
	cmds []persistence.Command
	then func(error)
	gen  uint64 // the leadership it was decided under
}

// errStaleProposal fails a write decided under a leadership that has ended:
// the state it was decided on is gone, so it must not reach the log.
var errStaleProposal = fmt.Errorf("%w: leadership changed before the write was sent", persistence.ErrNotLeader)

// writer applies proposals through the engine in order, off the loop. What
// queued up while a write was in flight goes out as the next single write
// (group commit): one fsync, or one Raft entry, for many changes.
type writer struct {
	engine  persistence.Engine
	queue   *mailbox[proposal]
	done    func(func(*core)) // posts a continuation to the loop
	gen     func() uint64     // the current leadership generation
	timeout time.Duration
	log     *slog.Logger
	observe func(took time.Duration, err error) // each write's latency (metrics); nil: none
}

// admit fails, on their own, the proposals that must not be written: ones
// from an ended leadership, and ones with a command State.Apply would refuse
// (which would otherwise be batched with, and reported as the failure of,
// unrelated writes). It returns the others.
func (w *writer) admit(ps []proposal) []proposal {
	gen := w.gen()
	ok := ps[:0]
	for _, p := range ps {
		err := error(nil)
		if p.gen != gen {
			err = errStaleProposal
		}
		for _, c := range p.cmds {
			if err == nil {
				err = c.Check()
			}
		}
		if err != nil {
			if errors.Is(err, errStaleProposal) {
				// The leadership that proposed it ended (stepping down,
				// stopping): its proposer hears so; nothing is wrong.
				w.log.Info("write of an ended leadership not sent", "err", err)
			} else {
				w.log.Warn("write refused before it was sent", "err", err)
			}
			then, e := p.then, err
			w.done(func(*core) { then(e) })
			continue
		}
		ok = append(ok, p)
	}
	return ok
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
				pending = w.admit(w.queue.take())
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
		start := time.Now()
		err := w.engine.Write(wctx, cmds)
		cancel()
		if w.observe != nil {
			w.observe(time.Since(start), err)
		}
		if err != nil {
			w.log.Warn("persistence write failed", "commands", len(cmds), "err", err)
		}
		w.done(func(*core) {
			for _, p := range batch {
				p.then(err)
			}
		})
		if len(pending) == 0 {
			pending = w.admit(w.queue.take())
		}
	}
}
