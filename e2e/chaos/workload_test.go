package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// recorder keeps the history of every op the workload made.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

// add records an op: called at call, answered now (or, if its outcome is
// unknown, possibly never).
func (r *recorder) add(clientID int, in input, call int64, out output) {
	ret := r.now()
	if out.unknown {
		ret = pending
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: clientID, Input: in, Call: call, Output: out, Return: ret})
}

func (r *recorder) history() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]porcupine.Operation(nil), r.ops...)
}

// tracked is an app or driver the workload made and knows the id of.
type tracked struct {
	key   string
	id    string
	ended bool // known to have ended (or its kill accepted)
}

// workload runs clients that register, kill, read and limit apps and
// submit, kill and read drivers, all under idempotency keys, through
// every master, for as long as its context lives (and at most maxOps).
type workload struct {
	rec     *recorder
	clients []*client.Client
	marker  string // drivers' commands carry it

	seq     atomic.Int64
	mu      sync.Mutex
	apps    []*tracked
	drivers []*tracked
	doubt   int // submissions whose outcome stayed unknown: never touched again

	counts sync.Map // opKind → *atomic.Int64
}

// Workload apps can never start an executor: their executors are larger
// than any worker. Their only way to end is a kill.
func appDesc(key string) wire.AppDescription {
	return wire.AppDescription{Name: key, Command: []string{"sleep", "1"}, MaxCores: 256, CoresPerExecutor: 256, MemoryPerExecutorMB: 64}
}

func (w *workload) driverDesc() wire.DriverDescription {
	return wire.DriverDescription{Command: []string{"sleep", "900", w.marker}, Cores: 1, MemoryMB: 32}
}

const (
	maxActiveApps    = 30
	maxActiveDrivers = 4
	opTimeout        = 20 * time.Second
)

// run makes ops from client i until ctx ends or maxOps are done.
func (w *workload) run(ctx context.Context, i, maxOps int) {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	for n := 0; n < maxOps && ctx.Err() == nil; n++ {
		w.one(ctx, i, rng)
		poll.Sleep(ctx, time.Duration(5+rng.IntN(20))*time.Millisecond)
	}
}

func (w *workload) count(k opKind) {
	v, _ := w.counts.LoadOrStore(k, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// one makes one op of a kind drawn at random.
func (w *workload) one(ctx context.Context, i int, rng *rand.Rand) {
	c := w.clients[i]
	activeApps, activeDrivers := w.active()
	switch p := rng.IntN(100); {
	case p < 20 && activeApps < maxActiveApps:
		w.register(ctx, i, c, fmt.Sprintf("app-%d", w.seq.Add(1)))
	case p < 24:
		if t := w.pick(rng, &w.apps); t != nil {
			w.register(ctx, i, c, t.key) // a repeat: must get the same id
		}
	case p < 40 || activeApps >= maxActiveApps:
		if t := w.pickActive(rng, &w.apps); t != nil {
			w.kill(ctx, i, c, t)
		}
	case p < 70:
		if t := w.pick(rng, &w.apps); t != nil {
			w.readApp(ctx, i, c, t)
		}
	case p < 80:
		if t := w.pickActive(rng, &w.apps); t != nil {
			w.limit(ctx, i, c, t, rng.IntN(6))
		}
	case p < 84 && activeDrivers < maxActiveDrivers:
		w.submitDriver(ctx, i, c, fmt.Sprintf("driver-%d", w.seq.Add(1)))
	case p < 89:
		if t := w.pickActive(rng, &w.drivers); t != nil {
			w.killDriver(ctx, i, c, t)
		}
	default:
		if t := w.pick(rng, &w.drivers); t != nil {
			w.readDriver(ctx, i, c, t)
		}
	}
}

func (w *workload) active() (apps, drivers int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.apps {
		if !t.ended {
			apps++
		}
	}
	for _, t := range w.drivers {
		if !t.ended {
			drivers++
		}
	}
	return apps, drivers
}

// pick returns one of *list at random (nil if empty); list is read under
// the workload's lock.
func (w *workload) pick(rng *rand.Rand, list *[]*tracked) *tracked {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(*list) == 0 {
		return nil
	}
	return (*list)[rng.IntN(len(*list))]
}

// pickActive returns one of *list not known to have ended.
func (w *workload) pickActive(rng *rand.Rand, list *[]*tracked) *tracked {
	w.mu.Lock()
	defer w.mu.Unlock()
	var act []*tracked
	for _, t := range *list {
		if !t.ended {
			act = append(act, t)
		}
	}
	if len(act) == 0 {
		return nil
	}
	return act[rng.IntN(len(act))]
}

// outcome turns a failed call into what the history records: a definite
// refusal (404, 409, 422) or an unknown outcome.
func outcome(err error) output {
	switch s := client.StatusCode(err); s {
	case 404, 409, 422:
		return output{status: s}
	}
	return output{unknown: true}
}

// timed makes one call of the workload within opTimeout, and returns when
// it was made (for the history) with its error.
func (w *workload) timed(ctx context.Context, do func(context.Context) error) (call int64, err error) {
	call = w.rec.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return call, do(octx)
}

// write makes a call that may change something (do says what it was
// answered) and records it: a failed call as its outcome (see outcome).
func (w *workload) write(ctx context.Context, i int, in input, do func(context.Context) (output, error)) (output, error) {
	var out output
	call, err := w.timed(ctx, func(ctx context.Context) (err error) {
		out, err = do(ctx)
		return err
	})
	if err != nil {
		out = outcome(err)
	}
	w.rec.add(i, in, call, out)
	w.count(in.kind)
	return out, err
}

// read makes a call that changes nothing (do says what it was answered)
// and records it, unless it failed: a failed read has no effect and says
// nothing, but for a 404, which says the app or driver is unknown.
func (w *workload) read(ctx context.Context, i int, in input, do func(context.Context) (output, error)) {
	var out output
	call, err := w.timed(ctx, func(ctx context.Context) (err error) {
		out, err = do(ctx)
		return err
	})
	w.count(in.kind)
	if err != nil {
		if client.StatusCode(err) != 404 {
			return
		}
		out = output{status: 404}
	}
	w.rec.add(i, in, call, out)
}

// submit registers an app or submits a driver under key (kind says which,
// do makes the call), repeating it (as a client must) while the outcome is
// unknown. It learns the id into *list once one attempt is answered.
func (w *workload) submit(ctx context.Context, i int, kind opKind, key string, list *[]*tracked, do func(context.Context) (string, error)) {
	for attempt := 0; attempt < 3; attempt++ {
		out, _ := w.write(ctx, i, input{kind: kind, key: key}, func(ctx context.Context) (output, error) {
			id, err := do(ctx)
			return output{id: id}, err
		})
		if !out.unknown {
			if out.status == 0 {
				w.learn(list, key, out.id)
			}
			return
		}
		if ctx.Err() != nil {
			break
		}
	}
	w.inDoubt(key)
}

func (w *workload) register(ctx context.Context, i int, c *client.Client, key string) {
	w.submit(ctx, i, opRegister, key, &w.apps, func(ctx context.Context) (string, error) {
		return c.RegisterApp(ctx, appDesc(key), client.WithIdempotencyKey(key))
	})
}

func (w *workload) submitDriver(ctx context.Context, i int, c *client.Client, key string) {
	w.submit(ctx, i, opSubmitDriver, key, &w.drivers, func(ctx context.Context) (string, error) {
		return c.SubmitDriver(ctx, w.driverDesc(), client.WithIdempotencyKey(key))
	})
}

// learn records the id of a key (once: a repeat must get the same id, which
// the history checks).
func (w *workload) learn(list *[]*tracked, key, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range *list {
		if t.key == key {
			return
		}
	}
	*list = append(*list, &tracked{key: key, id: id})
}

func (w *workload) inDoubt(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.doubt++
}

// end asks to end t (kind says how, do makes the call); once that is
// accepted, or may have been, t is not picked for more kills.
func (w *workload) end(ctx context.Context, i int, kind opKind, t *tracked, do func(context.Context) (output, error)) {
	out, err := w.write(ctx, i, input{kind: kind, key: t.key, id: t.id}, do)
	if err == nil || out.unknown {
		w.mu.Lock()
		defer w.mu.Unlock()
		t.ended = true
	}
}

func (w *workload) kill(ctx context.Context, i int, c *client.Client, t *tracked) {
	w.end(ctx, i, opKill, t, func(ctx context.Context) (output, error) {
		st, err := c.KillApp(ctx, t.id)
		return output{state: string(st.State), ended: st.State.Finished()}, err
	})
}

func (w *workload) killDriver(ctx context.Context, i int, c *client.Client, t *tracked) {
	w.end(ctx, i, opKillDriver, t, func(ctx context.Context) (output, error) {
		st, err := c.KillDriver(ctx, t.id)
		return output{state: string(st.State), ended: st.State.Finished(), killReq: st.KillRequested}, err
	})
}

func (w *workload) limit(ctx context.Context, i int, c *client.Client, t *tracked, n int) {
	w.write(ctx, i, input{kind: opLimit, key: t.key, id: t.id, n: n}, func(ctx context.Context) (output, error) {
		return output{}, c.SetExecutorLimit(ctx, t.id, n)
	})
}

func (w *workload) readApp(ctx context.Context, i int, c *client.Client, t *tracked) {
	w.read(ctx, i, input{kind: opRead, key: t.key, id: t.id}, func(ctx context.Context) (output, error) {
		st, err := c.App(ctx, t.id)
		limit := -1
		if st.ExecutorLimit != nil {
			limit = *st.ExecutorLimit
		}
		return output{state: string(st.State), ended: st.State.Finished(), limit: limit}, err
	})
}

func (w *workload) readDriver(ctx context.Context, i int, c *client.Client, t *tracked) {
	w.read(ctx, i, input{kind: opReadDriver, key: t.key, id: t.id}, func(ctx context.Context) (output, error) {
		st, err := c.Driver(ctx, t.id)
		return output{state: string(st.State), ended: st.State.Finished(), killReq: st.KillRequested}, err
	})
}

// keepLeases heartbeats every workload app that may be active, as a client
// without an event stream does, so that no app ends by its lease: the
// apps' clients are "alive" for the whole run.
func (w *workload) keepLeases(ctx context.Context, c *client.Client) {
	poll.Every(ctx, 500*time.Millisecond, func() {
		w.mu.Lock()
		var ids []string
		for _, a := range w.apps {
			ids = append(ids, a.id) // killed ones too: a kill of unknown outcome may not have committed
		}
		w.mu.Unlock()
		for _, id := range ids {
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = c.HeartbeatApp(hctx, id) // an ended app answers 409: fine
			cancel()
			if ctx.Err() != nil {
				return
			}
		}
	})
}

// finalReads reads every app and driver the workload knows, after the
// faults: the history then shows whether every acknowledged write is
// still there.
func (w *workload) finalReads(ctx context.Context) {
	w.mu.Lock()
	apps, drivers := append([]*tracked(nil), w.apps...), append([]*tracked(nil), w.drivers...)
	w.mu.Unlock()
	for _, t := range apps {
		w.readApp(ctx, 0, w.clients[0], t)
	}
	for _, t := range drivers {
		w.readDriver(ctx, 0, w.clients[0], t)
	}
}
