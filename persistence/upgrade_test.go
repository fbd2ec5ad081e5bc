package persistence

// Upgrade fixtures: what a master of one release writes, kept under
// testdata/upgrade/<release>, must be read by every later build (docs/HA.md,
// "Upgrades"). Each release adds its own directory with
//
//	go test ./persistence -run TestUpgradeFixtures -upgrade.generate=<release>
//
// and never changes an older one. A fixture holds:
//   - entries.json: Raft log entries as the master encodes them (every
//     command type, a batch, an ignorable type of a later version);
//   - state.json: the state those entries make, as this release encoded it;
//   - raft-snapshot.json: a Raft snapshot of it (what fsmSnapshot persists);
//   - snapshot.berth: an operator's snapshot file of it;
//   - datadir/: a master's data directory, Raft (raft/raft.db, a snapshot
//     and entries after it) and bolt (state.db), holding the same.
//
// A later build must decode and apply every entry, read every file and
// open both data directories, and end with a state that holds everything
// state.json holds (it may hold more: fields added since).

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/berth-cluster/berth/persistence/snapfile"
	"github.com/berth-cluster/berth/wire"
)

var generateFixture = flag.String("upgrade.generate", "", "write this build's upgrade fixtures to testdata/upgrade/`RELEASE` (a new directory) and exit the test")

const upgradeDir = "testdata/upgrade"

// fixtureEntry is one Raft log entry of entries.json.
type fixtureEntry struct {
	Types []string `json:"types"` // the commands it holds, for people
	Data  []byte   `json:"data"`  // Encode's bytes
}

// fixtureManifest is fixture.json: how the fixture was made.
type fixtureManifest struct {
	Release   string `json:"release"`
	Generated string `json:"generated"`
	NodeID    string `json:"nodeId"` // the Raft data directory's master
	RaftAddr  string `json:"raftAddr"`
}

// fixtureCommands is what the entries hold: every command type, with
// records that carry their optional fields. Each inner slice is one entry.
func fixtureCommands(t *testing.T) [][]Command {
	t.Helper()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ended := at.Add(time.Hour)
	var appDesc, driverDesc json.RawMessage = json.RawMessage(`{"name":"etl-nightly","command":["/opt/jobs/etl","--day","2026-11-26"],` +
		`"env":{"MODE":"full"},"maxCores":8,"coresPerExecutor":2,"memoryPerExecutorMB":2048,"initialExecutorLimit":3,` +
		`"resourcesPerExecutor":{"gpu":0.5},"queue":"etl","priority":5,"stopAfterDisconnect":"2m0s","ports":["http"],` +
		`"checks":[{"name":"up","type":"http","port":"http","path":"/healthz","interval":"10s","timeout":"2s","failures":3,"startPeriod":"30s"}],` +
		`"restart":{"attempts":4,"interval":"10m0s","delay":"5s","mode":"fail"},"constraints":[{"label":"zone","in":["a","b"]}]}`),
		json.RawMessage(`{"command":["/opt/jobs/driver"],"env":{"X":"1"},"cores":1,"memoryMB":512,"supervise":true,"resources":{"gpu":1},` +
			`"queue":"etl","priority":1,"ports":["ui"],"constraints":[{"label":"zone","notIn":["c"]}]}`)
	rec := func(v any, js string) {
		if err := json.Unmarshal([]byte(js), v); err != nil {
			t.Fatalf("fixture record %s: %v", js, err)
		}
	}
	var worker WorkerRecord
	rec(&worker, `{"id":"w1","host":"10.0.0.11","port":7078,"address":"https://10.0.0.11:7078","cores":16,"memoryMB":65536,`+
		`"resources":{"gpu":["0","1"]},"drainDeadline":"2026-11-26T13:00:00Z","portRange":{"first":20000,"last":20099}}`)
	var app AppRecord
	rec(&app, `{"id":"app-20261126120000-0007","desc":`+string(appDesc)+`,"submittedAt":"2026-11-26T12:00:00Z","executorLimit":3,`+
		`"executorIdsReserved":16,"state":"WAITING","owner":"driver-20261126120000-0002","tenant":"alpha","unixUser":"alpha",`+
		`"idempotencyKey":"k-1","idempotencyHash":"h-1"}`)
	var exec ExecutorRecord
	rec(&exec, `{"appId":"app-20261126120000-0007","id":4,"workerId":"w1","cores":2,"memoryMB":2048,`+
		`"resources":{"gpu":{"addresses":["0"],"share":0.5}},"preemptedFor":"for queue adhoc","startedAt":"2026-11-26T12:01:00Z",`+
		`"ports":{"http":20001},"reclaimedFor":"adhoc"}`)
	var driver DriverRecord
	rec(&driver, `{"id":"driver-20261126120000-0002","desc":`+string(driverDesc)+`,"submittedAt":"2026-11-26T12:00:00Z","state":"RUNNING",`+
		`"workerId":"w1","workerIncarnation":"inc-1","killRequested":true,"credentialHash":"ch","resources":{"gpu":{"addresses":["1"]}},`+
		`"ports":{"ui":20002},"tenant":"alpha","unixUser":"alpha","idempotencyKey":"k-2","idempotencyHash":"h-2"}`)
	var queue QueueRecord
	rec(&queue, `{"name":"etl","weight":2,"guarantee":{"cores":8,"memoryMB":16384,"resources":{"gpu":1}},"limit":{"cores":32},"preempt":true}`)
	var tenant TenantRecord
	rec(&tenant, `{"name":"alpha","queues":["etl","adhoc"],"tokenHash":"th","unixUser":"alpha","createdAt":"2026-11-26T11:00:00Z"}`)
	finished := app
	finished.ID, finished.State, finished.EndedAt, finished.Message, finished.CoresGranted = "app-20261126120000-0003", "FINISHED", &ended, "done", 4
	doneDriver := driver
	doneDriver.ID, doneDriver.State, doneDriver.EndedAt, doneDriver.ExitCode, doneDriver.RelaunchedAs = "driver-20261126120000-0001", "FAILED", &ended, ptrTo(3), "driver-20261126120000-0002"

	// A restore, of a state holding one of each.
	restored := NewState()
	for _, c := range []Command{PutWorker(worker), PutApp(app, 0), PutExecutor(exec), PutQueue(queue), PutTenant(tenant)} {
		if err := restored.Apply(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	unknown := Command{Type: 77 | IgnoreUnknownTypeFlag, ID: "from-a-later-version"}
	return [][]Command{
		{BumpEpoch(), PutMaster(MasterRecord{ID: "m1", APIAddr: "https://10.0.0.1:7077"})},
		{PutWorker(worker)},
		{PutQueue(queue), PutQueue(QueueRecord{Name: "adhoc", Weight: 1})},
		{PutTenant(tenant)},
		{PutApp(app, 100)},
		{PutExecutor(exec)},
		{PutDriver(driver, 100)},
		{PutApp(finished, 100), PutDriver(doneDriver, 100)},
		{EndSession(EndedSession{ID: "sess-1", Expires: at.Add(time.Hour).Unix(), At: at.Unix()})},
		{Audit(AuditRecord{Retain: 90 * 24 * time.Hour, Entry: mustAudit(t, `{"time":"2026-11-26T12:00:00Z","principal":"secret","tenant":"alpha","route":"POST /v1/apps","target":"app-20261126120000-0007","outcome":"ok","status":200}`)})},
		{PutApp(AppRecord{ID: "app-20261126120000-0009", State: "WAITING", SubmittedAt: at}, 0)},
		{{Type: TypeDeleteApp, ID: "app-20261126120000-0009"}, {Type: TypeDeleteDriver, ID: "driver-none"}},
		{PutQueue(QueueRecord{Name: "scratch"}), DeleteQueue("scratch"), PutTenant(TenantRecord{Name: "scratch"}), DeleteTenant("scratch")},
		{PutWorker(WorkerRecord{ID: "w9", Host: "10.0.0.19", Port: 7078}), DeleteWorker("w9"), PutMaster(MasterRecord{ID: "m9"}), DeleteMaster("m9")},
		{PutExecutor(ExecutorRecord{AppID: app.ID, ID: 5, WorkerID: "w1", Cores: 1}), DeleteExecutor(app.ID, 5)},
		{unknown},
		{BumpEpoch(), PutMaster(MasterRecord{ID: "m2", APIAddr: "https://10.0.0.2:7077"})},
		{Restore(RestoreRecord{State: restored, From: snapfile.Meta{Format: 1, Index: 12, Term: 2, Time: at, Version: "v0.0.0-fixture", Master: "m1", Size: 1}})},
		// An executor's end, kept for its active app (after the restore,
		// which replaces what came before).
		append([]Command{PutExecutor(ExecutorRecord{AppID: app.ID, ID: 6, WorkerID: "w1", Cores: 1})},
			EndExecutor(app.ID, wire.ExecutorStatus{ID: 6, WorkerID: "w1", Host: "10.0.0.11", Cores: 1, MemoryMB: 1024, State: "FAILED", ExitCode: ptrTo(3),
				Message: "exited with code 3", Ports: map[string]int{"http": 20003}, Health: "unhealthy", Cause: "worker"})...),
		{PutDriver(driver, 100), PutApp(finished, 100)},
	}
}

func ptrTo[T any](v T) *T { return &v }

func mustAudit(t *testing.T, js string) (e wire.AuditEntry) {
	t.Helper()
	if err := json.Unmarshal([]byte(js), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestUpgradeFixtures loads every release's fixtures in this build (and,
// with -upgrade.generate, first writes this release's).
func TestUpgradeFixtures(t *testing.T) {
	if *generateFixture != "" {
		generateUpgradeFixture(t, *generateFixture)
	}
	dirs, err := os.ReadDir(upgradeDir)
	if err != nil {
		t.Fatalf("reading %s: %v", upgradeDir, err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		n++
		t.Run(d.Name(), func(t *testing.T) { loadUpgradeFixture(t, filepath.Join(upgradeDir, d.Name())) })
	}
	if n == 0 {
		t.Fatalf("no fixture in %s", upgradeDir)
	}
}

func loadUpgradeFixture(t *testing.T, dir string) {
	var manifest fixtureManifest
	readJSON(t, filepath.Join(dir, "fixture.json"), &manifest)
	var want any
	readJSON(t, filepath.Join(dir, "state.json"), &want)
	holds := func(what string, s *State) {
		t.Helper()
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var got any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if err := contains(got, want, "state"); err != nil {
			t.Errorf("%s does not hold what %s's state.json holds: %v", what, manifest.Release, err)
		}
	}

	// The log entries, decoded and applied in order.
	var entries []fixtureEntry
	readJSON(t, filepath.Join(dir, "entries.json"), &entries)
	s := NewState()
	for i, e := range entries {
		cmds, err := Decode(e.Data)
		if err != nil {
			t.Fatalf("entry %d (%v): %v", i, e.Types, err)
		}
		if err := applyAll(s, cmds, nil); err != nil {
			t.Errorf("entry %d (%v): %v", i, e.Types, err)
		}
	}
	holds("the entries applied", s)

	// A Raft snapshot.
	f, err := os.Open(filepath.Join(dir, "raft-snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := decodeSnapshot(f)
	f.Close()
	if err != nil {
		t.Fatalf("raft-snapshot.json: %v", err)
	}
	holds("raft-snapshot.json", snap)

	// An operator's snapshot file.
	data, err := os.ReadFile(filepath.Join(dir, "snapshot.berth"))
	if err != nil {
		t.Fatal(err)
	}
	meta, _, fromFile, err := DecodeSnapshotFile(bytes.NewReader(data), 1<<30)
	if err != nil {
		t.Fatalf("snapshot.berth: %v", err)
	}
	if meta.Index == 0 || meta.Version == "" {
		t.Errorf("snapshot.berth's metadata %+v", meta)
	}
	holds("snapshot.berth", fromFile)

	// The data directories, copied (opening writes to them).
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(filepath.Join(dir, "datadir"))); err != nil {
		t.Fatal(err)
	}
	b, err := OpenBolt(filepath.Join(work, "state.db"))
	if err != nil {
		t.Fatalf("datadir/state.db: %v", err)
	}
	fromBolt, _ := b.Load(context.Background())
	b.Close()
	holds("datadir/state.db", fromBolt)

	r, err := OpenRaft(RaftConfig{ID: manifest.NodeID, Addr: freeAddr(t), Dir: filepath.Join(work, "raft"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("datadir/raft: %v", err)
	}
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !r.IsLeader() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !r.IsLeader() {
		t.Fatal("datadir/raft: its one master did not lead")
	}
	if err := r.Barrier(context.Background()); err != nil {
		t.Fatal(err)
	}
	fromRaft, _ := r.Load(context.Background())
	holds("datadir/raft", fromRaft)
	if err := r.Write(context.Background(), []Command{BumpEpoch()}); err != nil {
		t.Errorf("datadir/raft: a write after the upgrade: %v", err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// contains reports where got lacks something of want (decoded JSON): every
// field of an object must be there with a value that contains want's;
// arrays and scalars must be equal (arrays element by element).
func contains(got, want any, path string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %v, want an object", path, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing", path, k)
			}
			if err := contains(gv, wv, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: %v, want %v", path, got, want)
		}
		for i := range w {
			if err := contains(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%s: %v, want %v", path, got, want)
	}
	return nil
}

// generateUpgradeFixture writes this build's fixtures to a new directory.
func generateUpgradeFixture(t *testing.T, release string) {
	dir := filepath.Join(upgradeDir, release)
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("%s exists: a release's fixtures are never rewritten", dir)
	}
	batches := fixtureCommands(t)
	var entries []fixtureEntry
	s := NewState()
	for _, cmds := range batches {
		data, err := Encode(cmds)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, c := range cmds {
			types = append(types, c.Type.String())
		}
		entries = append(entries, fixtureEntry{Types: types, Data: data})
		decoded, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := applyAll(s, decoded, nil); err != nil {
			t.Fatalf("%v: %v", types, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "datadir", "raft"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(dir, "entries.json"), entries)
	writeJSON(t, filepath.Join(dir, "state.json"), s)
	var persisted bytes.Buffer
	if err := (&fsmSnapshot{state: s}).Persist(&bufferSink{Buffer: &persisted}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "raft-snapshot.json"), persisted.Bytes())

	// The Raft data directory: half the entries, a snapshot, the rest.
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	raftDir := filepath.Join(t.TempDir(), "raft")
	addr := freeAddr(t)
	r, err := OpenRaft(RaftConfig{ID: "m1", Addr: addr, Dir: raftDir, Peers: map[string]string{"m1": addr}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	for !r.IsLeader() {
		time.Sleep(10 * time.Millisecond)
	}
	for i, e := range entries {
		if err := r.raft.Apply(e.Data, 5*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
		if i == len(entries)/2 {
			if err := r.raft.Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fromRaft, index, term, _ := r.LoadApplied(context.Background())
	if !fromRaft.Equal(s) {
		t.Fatal("the Raft directory's state is not the entries'")
	}
	r.Close()
	if err := os.CopyFS(filepath.Join(dir, "datadir", "raft"), os.DirFS(raftDir)); err != nil {
		t.Fatal(err)
	}

	b, err := OpenBolt(filepath.Join(dir, "datadir", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmds := range batches {
		if err := b.Write(context.Background(), cmds); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()

	file, _, err := EncodeSnapshotFile(s, snapfile.Meta{Index: index, Term: term, Time: time.Date(2026, 11, 26, 12, 30, 0, 0, time.UTC), Version: release, Master: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "snapshot.berth"), file)
	writeJSON(t, filepath.Join(dir, "fixture.json"), fixtureManifest{Release: release, Generated: time.Now().UTC().Format(time.RFC3339), NodeID: "m1", RaftAddr: addr})
	// Readable by whoever runs the tests (the stores write theirs 0600).
	_ = filepath.WalkDir(filepath.Join(dir, "datadir"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			err = os.Chmod(p, 0o644)
		}
		return err
	})
	t.Logf("wrote %s", dir)
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, append(data, '\n'))
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
