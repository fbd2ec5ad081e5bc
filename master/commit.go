package master

import (
	"github.com/berth-cluster/berth/persistence"
)

// Every change to durable state is made commit-first. A transition decides
// a change and writes it; only once the write is durable does the change
// happen in memory and does anything follow from it: an event to a client,
// a command to a worker, an answer to a request. A write that fails leaves
// the master as it was, so nothing is ever seen, acknowledged or acted on
// that a new leader would not find in the log.
//
// While a change is in flight the entity is marked (an app ending, a
// worker being removed, an executor launching), so that no second decision
// contradicts the first: an ending app gets no executors, a worker being
// removed gets no work. The marks are internal; what the master shows is
// the committed state.

// commit writes cmds. Once they are durable, and if this master still has
// the leadership it decided them under, apply makes the change in memory.
// done, if not nil, then learns the outcome: nil, or the error a client
// must see (persistErr). A durable write from an ended leadership is
// reported as a success without being applied: the new leader recovers it
// from the log.
func (c *core) commit(cmds []persistence.Command, apply func(), done func(error)) {
	if err := c.tenantWriteRefused(); err != nil {
		if done != nil {
			done(err)
		}
		return
	}
	cmds = c.withAudit(cmds)
	gen := c.gen
	c.fx.persist(cmds, func(err error) {
		if err != nil {
			err = c.persistErr(gen, err)
		} else if gen == c.gen {
			apply()
		}
		if done != nil {
			done(err)
		}
	})
}

// record is one entity's durable record, as its writes need it: the
// committed record (rec), the writes of it in flight (queue), whether the
// entity is still the core's (listed; if not, gone is the answer), and the
// commands that write a changed record (put).
type record[R any] struct {
	rec    *R
	queue  *serial
	listed func() bool
	gone   func() error
	put    func(R) []persistence.Command
}

// recordChange is one change of a record: edit makes it on a copy; once
// the copy is durable it is the record and apply runs (if this leadership
// goes on); done learns the outcome.
type recordChange[R any] struct {
	edit  func(*R)
	apply func()
	done  func(error)
}

// write makes ch after the writes of the record already in flight, in
// this order: wait for its turn; give up (done(gone())) if the entity is
// no longer listed; edit a copy; commit the copy's commands; once durable,
// the copy is the record, apply runs, and the next write may start.
func (r record[R]) write(c *core, ch recordChange[R]) {
	req := c.req // a write queued behind others still carries its request's entry
	r.queue.do(func() {
		was := c.req
		c.req = req
		defer func() { c.req = was }()
		if !r.listed() {
			r.queue.done()
			ch.done(r.gone())
			return
		}
		next := *r.rec
		ch.edit(&next)
		c.commit(r.put(next), func() {
			*r.rec = next
			ch.apply()
		}, func(err error) {
			if err == nil {
				*r.rec = next // durable, even if this leadership ended before applying it
			}
			r.queue.done()
			c.schedule()
			ch.done(err)
		})
	})
}

// serial runs the writes of one record one after another, so that each
// write carries the committed record plus its own change only: a change
// whose write failed is never carried by a later write of the record.
type serial struct {
	busy   bool
	queued []func()
}

// do runs start now if no write of the record is in flight, else once the
// writes queued before it are done. start must call done when its write
// has finished (or when it decided not to write).
func (s *serial) do(start func()) {
	if s.busy {
		s.queued = append(s.queued, start)
		return
	}
	s.busy = true
	start()
}

// done ends the write in flight and starts the next queued one.
func (s *serial) done() {
	if len(s.queued) == 0 {
		s.busy = false
		return
	}
	next := s.queued[0]
	s.queued = s.queued[1:]
	next()
}

// then runs fn once the writes queued before it are done, to decide
// something against the record as it will then be committed.
func (s *serial) then(fn func()) {
	s.do(func() {
		s.done()
		fn()
	})
}

// waiters are the requests waiting for a change in flight.
type waiters []func(error)

func (w *waiters) add(fn func(error)) {
	if fn != nil {
		*w = append(*w, fn)
	}
}

// finish tells every waiter the change's outcome.
func (w waiters) finish(err error) {
	for _, fn := range w {
		fn(err)
	}
}

// joinEnding adds done to the end of an app, a driver or a worker in
// flight and reports true, or starts its end (*ending set) and reports
// false.
func joinEnding(ending **waiters, done func(error)) (inFlight bool) {
	inFlight = *ending != nil
	if !inFlight {
		*ending = &waiters{}
	}
	(*ending).add(done)
	return inFlight
}

// endingWritten answers the waiters of an end with its write's outcome. A
// failed end leaves the app or driver (kind, id) as it was: it may be
// ended again.
func (c *core) endingWritten(ending **waiters, err error, kind, id string) {
	w := **ending
	if err != nil {
		c.log.Warn("ending "+kind+" failed; it stays as it was", kind, id, "err", err)
		*ending = nil
	}
	w.finish(err)
}

// inTurn runs write, a write of a queue or a tenant, once those before it
// have been answered. Each decides against the committed state (does the
// tenant exist, is its unix user free, do the guarantees fit, does a tenant
// still name the queue) and then commits: two at once would each decide
// against a state without the other (two creates of one tenant were both
// answered 201, the second's token replacing the first's). The write runs
// with its own request's audit tag, however late its turn comes.
func inTurn[R any](c *core, r reply[R], write func(reply[R])) {
	req := c.req
	c.sharedWrites.do(func() {
		was := c.req
		c.req = req
		defer func() { c.req = was }()
		write(func(v R, err error) {
			r(v, err)
			c.sharedWrites.done()
		})
	})
}
