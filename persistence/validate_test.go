package persistence

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// validSnapshot holds one record of each kind, consistent.
const validSnapshot = `{"epoch":3,
	"apps":{"app-1":{"id":"app-1","state":"WAITING"},"app-2":{"id":"app-2","state":"FINISHED","endedAt":"2026-11-22T10:00:00Z"}},
	"drivers":{"driver-1":{"id":"driver-1","state":"SUBMITTED"}},
	"workers":{"w1":{"id":"w1"}},
	"masters":{"m1":{"id":"m1"}},
	"executors":{"app-1/0":{"appId":"app-1","id":0,"workerId":"w1"}},
	"nextAppNumber":3,"nextDriverNumber":2}`

// brokenSnapshots are validSnapshot with one invariant broken, and what
// the error must name.
var brokenSnapshots = []struct {
	name, from, to, names string
}{
	{"null app", `"app-1":{"id":"app-1","state":"WAITING"}`, `"app-1":null`, `apps["app-1"] is null`},
	{"app under another id", `"app-1":{"id":"app-1","state":"WAITING"}`, `"app-1":{"id":"app-9","state":"WAITING"}`, `apps["app-1"] holds the record of "app-9"`},
	{"null driver", `"driver-1":{"id":"driver-1","state":"SUBMITTED"}`, `"driver-1":null`, `drivers["driver-1"] is null`},
	{"driver under another id", `"driver-1":{"id":"driver-1"`, `"driver-1":{"id":"driver-2"`, `drivers["driver-1"] holds the record of "driver-2"`},
	{"worker under another id", `"w1":{"id":"w1"}`, `"w1":{"id":"w2"}`, `workers["w1"] holds the record of "w2"`},
	{"master without an id", `"m1":{"id":"m1"}`, `"":{"id":""}`, `masters holds a record without an id`},
	{"null executor", `"app-1/0":{"appId":"app-1","id":0,"workerId":"w1"}`, `"app-1/0":null`, `executors["app-1/0"] is null`},
	{"executor under another key", `"app-1/0":{`, `"app-1/7":{`, `executors["app-1/7"] holds the record of "app-1/0"`},
}

// leftoverExecutors are validSnapshot with its executor left without its
// app or worker: a leftover an earlier version could write, dropped when
// the state is read back (Repair), not a reason to refuse it.
var leftoverExecutors = []struct{ name, from, to string }{
	{"executor without its app", `"app-1/0":{"appId":"app-1"`, `"app-3/0":{"appId":"app-3"`},
	{"executor of an ended app", `"app-1/0":{"appId":"app-1"`, `"app-2/0":{"appId":"app-2"`},
	{"executor without its worker", `"workerId":"w1"`, `"workerId":"w9"`},
}

func TestDecodeSnapshotValidates(t *testing.T) {
	if _, err := decodeSnapshot(strings.NewReader(validSnapshot)); err != nil {
		t.Fatalf("a valid snapshot was refused: %v", err)
	}
	for _, tc := range brokenSnapshots {
		data := strings.Replace(validSnapshot, tc.from, tc.to, 1)
		if data == validSnapshot {
			t.Fatalf("%s: the case changes nothing", tc.name)
		}
		_, err := decodeSnapshot(strings.NewReader(data))
		if !errors.Is(err, errInvalidState) || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%s: got %v, want an invalid state naming %s", tc.name, err, tc.names)
		}
	}
	for _, tc := range leftoverExecutors {
		s, err := decodeSnapshot(strings.NewReader(strings.Replace(validSnapshot, tc.from, tc.to, 1)))
		if err != nil || len(s.Executors) != 0 || len(s.Apps) != 2 {
			t.Errorf("%s: got %v, want the state without the executor", tc.name, err)
		}
	}
}

// The bbolt engine checks the records it reads back as a snapshot is: a
// file with a null record or a record under another key is refused at open;
// a leftover executor is dropped.
func TestOpenBoltValidates(t *testing.T) {
	cases := []struct {
		name       string
		bucket     Bucket
		key, value string
		names      string
	}{
		{"null app", BucketApps, "app-1", `null`, `apps["app-1"] is null`},
		{"app under another key", BucketApps, "app-1", `{"id":"app-2","state":"WAITING"}`, `apps["app-1"] holds the record of "app-2"`},
		{"leftover executor", BucketExecutors, "app-9/0", `{"appId":"app-9","id":0,"workerId":"w1"}`, ""},
	}
	for _, tc := range cases {
		path := filepath.Join(t.TempDir(), "state.db")
		b, err := OpenBolt(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Write(context.Background(), []Command{PutWorker(WorkerRecord{ID: "w1"})}); err != nil {
			t.Fatal(err)
		}
		b.Close()
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(tc.bucket)).Put([]byte(tc.key), []byte(tc.value))
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		b, err = OpenBolt(path)
		if tc.names == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.name, err)
			} else if st, _ := b.Load(context.Background()); len(st.Executors) != 0 {
				t.Errorf("%s: kept %v", tc.name, st.Executors)
			}
			if b != nil {
				b.Close()
			}
			continue
		}
		if err == nil {
			b.Close()
			t.Errorf("%s: the file was opened", tc.name)
		} else if !errors.Is(err, errInvalidState) || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%s: got %v, want an invalid state naming %s", tc.name, err, tc.names)
		}
	}
}

// The ended index is checked once built: an index that lost track of an
// ended record would trim the wrong ones.
func TestValidateChecksTheEndedIndex(t *testing.T) {
	s := NewState()
	for _, id := range []string{"app-1", "app-2"} {
		if err := s.Apply(PutApp(finishedApp(id, t0), 5), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	delete(s.Apps, "app-1") // behind Apply's back: the index still lists it
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "index of ended apps") {
		t.Fatalf("a stale index passed: %v", err)
	}
}

// Executor records left without their app or worker by an earlier version
// are dropped when a state is read back, not a reason to refuse it;
// corruption still is.
func TestSnapshotWithLeftoverExecutorsIsRepaired(t *testing.T) {
	data := []byte(`{"epoch":3,"apps":{},"drivers":{},"workers":{},"masters":{},` +
		`"executors":{"app-1/0":{"appId":"app-1","id":0,"workerId":"w9","cores":1}}}`)
	s, err := decodeSnapshot(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("a snapshot with a leftover executor was refused: %v", err)
	}
	if len(s.Executors) != 0 || s.Epoch != 3 {
		t.Fatalf("after the repair: %d executors, epoch %d", len(s.Executors), s.Epoch)
	}
	if _, err := decodeSnapshot(bytes.NewReader([]byte(`{"apps":{"app-1":null},"drivers":{},"workers":{},"masters":{},"executors":{}}`))); err == nil {
		t.Fatal("a snapshot with a null record was accepted")
	}
}
