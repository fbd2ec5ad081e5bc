package persistence

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// benchState holds 1000 workers and 1000 active apps, each with an
// executor: a large cluster, for the cost of one put or delete in it.
func benchState(b *testing.B) *State {
	s := NewState()
	for i := range 1000 {
		w := WorkerRecord{ID: fmt.Sprintf("w%d", i), Cores: 16, MemoryMB: 65536}
		a := app(fmt.Sprintf("app-20261122100000-%04d", i))
		for _, c := range []Command{PutWorker(w), PutApp(a, 0), PutExecutor(ExecutorRecord{AppID: a.ID, WorkerID: w.ID, Cores: 1})} {
			if err := s.Apply(c, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	return s
}

// endedStatus is an executor's end as a worker's report makes it.
func endedStatus(id int) wire.ExecutorStatus {
	return wire.ExecutorStatus{ID: id, WorkerID: "w1", Host: "10.0.0.1", Cores: 1, MemoryMB: 1024, State: wire.ExecutorFailed,
		ExitCode: new(int), Message: "exited with code 1: java.lang.OutOfMemoryError: Java heap space"}
}

// fillEnded gives each app of benchState EndedExecutorsKept ended executors.
func fillEnded(b *testing.B, s *State) {
	for i := range 1000 {
		appID := fmt.Sprintf("app-20261122100000-%04d", i)
		for id := range EndedExecutorsKept {
			e := ExecutorRecord{AppID: appID, ID: 100 + id, WorkerID: "w1", Cores: 1}
			for _, c := range append([]Command{PutExecutor(e)}, EndExecutor(appID, endedStatus(e.ID))...) {
				if err := s.Apply(c, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// The commands a busy master writes most: a worker's record, an executor
// placed and ended, a queue set. touched is counted, as an engine that
// writes records one by one (Bolt) is told.
func BenchmarkApplyPut(b *testing.B) {
	n := 0
	touched := func(Key) { n++ }
	for _, tc := range []struct {
		name string
		cmds func(i int) []Command
	}{
		{"worker", func(i int) []Command {
			return []Command{PutWorker(WorkerRecord{ID: fmt.Sprintf("w%d", i%1000), Cores: 16})}
		}},
		{"executor-put-delete", func(i int) []Command {
			e := ExecutorRecord{AppID: fmt.Sprintf("app-20261122100000-%04d", i%1000), ID: 1, WorkerID: "w1", Cores: 1}
			return []Command{PutExecutor(e), DeleteExecutor(e.AppID, e.ID)}
		}},
		// An executor placed and ended with its status kept, each app
		// holding EndedExecutorsKept ends already (the most an end copies):
		// what the end's record costs over the delete alone.
		{"executor-put-end-at-cap", func(i int) []Command {
			e := ExecutorRecord{AppID: fmt.Sprintf("app-20261122100000-%04d", i%1000), ID: 1000 + i, WorkerID: "w1", Cores: 1}
			return append([]Command{PutExecutor(e)}, EndExecutor(e.AppID, endedStatus(e.ID))...)
		}},
		{"queue", func(i int) []Command {
			return []Command{PutQueue(QueueRecord{Name: fmt.Sprintf("q%d", i%10), Weight: 1})}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := benchState(b)
			n := 1000
			if tc.name == "executor-put-end-at-cap" {
				// Each end new (ids unique up to n): run it with
				// -benchtime of at most 50000x, else ends repeat and
				// cost only the check that they are kept already.
				fillEnded(b, s)
				n = 50_000
			}
			cmds := make([][]Command, n)
			for i := range cmds {
				cmds[i] = tc.cmds(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for _, c := range cmds[i%len(cmds)] {
					if err := s.Apply(c, touched); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// One write to a bolt file: a worker's record, or a batch of 16 executor
// placements (then their ends), as the master's writer batches them.
// nosync leaves out the fsync, which is most of a real write and the same
// whatever the code does, to show the rest.
func BenchmarkBoltWrite(b *testing.B) {
	placements := func(i int) []Command {
		var cmds []Command
		for id := range 16 {
			if i%2 == 0 {
				cmds = append(cmds, PutExecutor(ExecutorRecord{AppID: "app-20261122100000-0001", ID: id, WorkerID: "w1", Cores: 1}))
			} else {
				cmds = append(cmds, DeleteExecutor("app-20261122100000-0001", id))
			}
		}
		return cmds
	}
	worker := func(i int) []Command {
		return []Command{PutWorker(WorkerRecord{ID: fmt.Sprintf("w%d", i%100), Cores: 16})}
	}
	for _, tc := range []struct {
		name string
		sync bool
		cmds func(int) []Command
	}{
		{"worker/nosync", false, worker},
		{"executors16/nosync", false, placements},
		{"worker/sync", true, worker},
	} {
		b.Run(tc.name, func(b *testing.B) {
			eng, err := OpenBolt(filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			eng.db.NoSync = !tc.sync
			setup := []Command{PutWorker(WorkerRecord{ID: "w1", Cores: 64}), PutApp(app("app-20261122100000-0001"), 0)}
			if err := eng.Write(context.Background(), setup); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := eng.Write(context.Background(), tc.cmds(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
