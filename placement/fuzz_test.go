package placement_test

// FuzzRound (run by `make fuzz`: go test -fuzz FuzzRound ./placement) decodes
// bytes into a small cluster, a few apps, a policy, a unit and an order, runs
// one round and checks it: no panic, inputs untouched, the round's
// invariants, and for spread and pack on sane input, the reference's launches
// exactly. One header bit switches to "bad values" (negative numbers, repeated
// worker IDs), where only the safety invariants are checked.

import (
	"fmt"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// fuzzOrders includes Spark's spellings and the default "".
var fuzzOrders = []string{"", "cores-free-desc", "cores-free-asc", "memory-free-desc", "memory-free-asc", "worker-id",
	"CORES_FREE_DESC", "CORES_FREE_ASC", "MEMORY_FREE_DESC", "MEMORY_FREE_ASC", "WORKER_ID"}

// byteReader hands out the fuzzer's bytes, then zeros.
type byteReader []byte

func (r *byteReader) next() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

// fuzzCase is one decoded round.
type fuzzCase struct {
	policy  string
	opts    placement.Options
	apps    []placement.App
	workers []placement.Worker
	sane    bool // non-negative values, unique worker IDs: the reference applies
}

// decodeRound: header [policy, unit, order, #workers, #apps, flags], then 3
// bytes per worker [id, cores, memory] and 5 per app [coresLeft,
// coresPerExecutor, memory, executorLimit, executors].
func decodeRound(data []byte) fuzzCase {
	r := byteReader(data)
	names := placement.Names()
	c := fuzzCase{
		policy: names[int(r.next())%len(names)],
		opts:   placement.Options{MinCoreUnit: int(r.next() % 10)},
	}
	c.opts.Order = fuzzOrders[int(r.next())%len(fuzzOrders)]
	nWorkers, nApps, flags := int(r.next()%13), int(r.next()%7), r.next()
	bad := flags&1 == 1
	c.sane = !bad
	// signed reads a byte as a small number, negative only in bad mode.
	signed := func(b byte, mod int) int {
		if bad {
			return int(int8(b)) % mod
		}
		return int(b) % mod
	}
	for i := range nWorkers {
		id := fmt.Sprintf("w%c%d", 'a'+r.next()%8, i) // unique, not in slice order
		cores, memory := r.next(), r.next()
		if bad && cores&0x40 != 0 {
			id = fmt.Sprintf("w%d", cores%3) // repeats
		}
		c.workers = append(c.workers, placement.Worker{ID: id, CoresFree: signed(cores, 40), MemoryFreeMB: signed(memory, 128) * 128})
	}
	for i := range nApps {
		coresLeft, cpe, memory, limit, execs := r.next(), r.next(), r.next(), r.next(), r.next()
		app := placement.App{
			ID:                  fmt.Sprintf("app-%d", i),
			CoresLeft:           signed(coresLeft, 64),
			CoresPerExecutor:    signed(cpe, 12),
			MemoryPerExecutorMB: signed(memory, 64) * 128,
			ExecutorLimit:       signed(limit, 12),
			Executors:           signed(execs, 4),
		}
		if coresLeft == 0xff {
			app.CoresLeft = placement.Unlimited
		}
		if app.CoresPerExecutor > 6 {
			app.CoresPerExecutor = 0 // about half the apps leave the size unset
		}
		if limit&0x80 != 0 {
			app.ExecutorLimit = placement.Unlimited
		}
		c.apps = append(c.apps, app)
	}
	return c
}

func FuzzRound(f *testing.F) {
	// Seeds: the example (8/7/6 cores, 3 needed) at unit 4 and 1;
	// MasterSuite's three 10-core workers with a fixed-size app; a crowded
	// multi-app round; a bad-values round; and an empty one.
	f.Add([]byte{2, 4, 1, 3, 1, 0, 'a', 8, 64, 'b', 7, 64, 'c', 6, 64, 3, 0, 8, 0x80, 0})
	f.Add([]byte{2, 1, 0, 3, 1, 0, 'a', 8, 64, 'b', 7, 64, 'c', 6, 64, 3, 0, 8, 0x80, 0})
	f.Add([]byte{1, 0, 5, 3, 1, 0, 0, 10, 32, 1, 10, 32, 2, 10, 32, 0xff, 2, 8, 0x80, 0})
	f.Add([]byte{0, 2, 2, 6, 4, 0, 0, 12, 20, 1, 3, 90, 2, 30, 8, 3, 7, 7, 4, 1, 40, 5, 25, 5,
		40, 0, 16, 0x80, 0, 13, 3, 4, 5, 2, 0xff, 9, 1, 0x81, 1, 7, 0, 0, 3, 3})
	f.Add([]byte{2, 3, 7, 5, 3, 1, 0, 0xf0, 0x80, 1, 0x50, 0x10, 2, 12, 12, 3, 20, 0xff, 4, 4, 4,
		0xfe, 0xfd, 2, 0x80, 0xff, 10, 0xf9, 0x70, 3, 0x90, 0xff, 0, 6, 0x81, 0x03})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := decodeRound(data)
		p, err := placement.New(c.policy, c.opts)
		if err != nil {
			t.Fatalf("New(%q, %+v): %v", c.policy, c.opts, err)
		}
		apps0, workers0 := cloneCluster(c.apps, c.workers)
		launches := placement.StartExecutorsOnWorkers(c.apps, c.workers, p)
		if !same(c.apps, apps0) || !same(c.workers, workers0) {
			t.Fatalf("inputs modified")
		}
		if bad := roundViolations(c.apps, c.workers, c.opts.MinCoreUnit, launches); len(bad) > 0 {
			t.Fatalf("%s %+v: invalid round\napps    %+v\nworkers %+v\nlaunches %+v\n%v", c.policy, c.opts, c.apps, c.workers, launches, bad)
		}
		for _, app := range c.apps {
			if cores := p.Assign(app, c.workers); len(assignViolations(app, c.workers, c.opts.MinCoreUnit, cores)) > 0 {
				t.Fatalf("%s %+v: Assign(%+v, %+v) = %v: %v", c.policy, c.opts, app, c.workers, cores,
					assignViolations(app, c.workers, c.opts.MinCoreUnit, cores))
			}
		}
		spread, isSpark := sparkPolicies[c.policy]
		if !c.sane || !isSpark {
			return
		}
		if want := referenceStartExecutorsOnWorkers(c.apps, c.workers, spread, c.opts.MinCoreUnit, c.opts.Order); !same(launches, want) {
			t.Fatalf("%s %+v: round differs from the reference\napps    %+v\nworkers %+v\ngot  %+v\nwant %+v",
				c.policy, c.opts, c.apps, c.workers, launches, want)
		}
		for _, app := range c.apps {
			if got, want := p.Assign(app, c.workers), referenceAssign(app, c.workers, spread, c.opts.MinCoreUnit); !same(got, want) {
				t.Fatalf("%s %+v: Assign(%+v, %+v) = %v, reference %v", c.policy, c.opts, app, c.workers, got, want)
			}
		}
	})
}

// TestDecodeRoundSeeds makes sure the seeds decode to what their comments
// say, so the fuzzer starts from meaningful rounds.
func TestDecodeRoundSeeds(t *testing.T) {
	c := decodeRound([]byte{2, 4, 1, 3, 1, 0, 'a', 8, 64, 'b', 7, 64, 'c', 6, 64, 3, 0, 8, 0x80, 0})
	if c.policy != "spread" || c.opts.MinCoreUnit != 4 || c.opts.Order != "cores-free-desc" || !c.sane {
		t.Fatalf("header decoded as %+v", c)
	}
	if len(c.workers) != 3 || c.workers[0].CoresFree != 8 || c.workers[2].CoresFree != 6 || len(c.apps) != 1 || c.apps[0].CoresLeft != 3 ||
		c.apps[0].CoresPerExecutor != 0 || c.apps[0].ExecutorLimit != placement.Unlimited {
		t.Fatalf("decoded as %+v", c)
	}
	launches := placement.StartExecutorsOnWorkers(c.apps, c.workers, mustNew(t, c.policy, c.opts))
	if len(launches) != 1 || launches[0].Cores != 3 || launches[0].WorkerID != c.workers[0].ID {
		t.Fatalf("the seed example decoded into a round that launches %+v", launches)
	}
}
