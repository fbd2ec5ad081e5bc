package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/persistence/snapfile"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// operatorMaster answers the operator's routes like a leader, recording
// the restores it gets.
type operatorMaster struct {
	srv  *httptest.Server
	file []byte

	mu       sync.Mutex
	restores []wire.RestoreRequest
}

func testSnapshotFile(t *testing.T) []byte {
	t.Helper()
	s := persistence.NewState()
	for _, c := range []persistence.Command{
		persistence.BumpEpoch(),
		persistence.PutQueue(persistence.QueueRecord{Name: "etl", Weight: 2}),
		persistence.PutApp(persistence.AppRecord{ID: "app-20261126120000-0001", State: wire.AppWaiting, Desc: wire.AppDescription{Command: []string{"pi"}}}, 0),
	} {
		if err := s.Apply(c, nil); err != nil {
			t.Fatal(err)
		}
	}
	data, _, err := persistence.EncodeSnapshotFile(s, snapfile.Meta{Index: 42, Term: 3, Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), Version: "v9.9.9", Master: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func newOperatorMaster(t *testing.T) *operatorMaster {
	f := &operatorMaster{file: testSnapshotFile(t)}
	api := wire.MasterAPI
	mux := http.NewServeMux()
	mux.HandleFunc(api.SnapshotSave.Mux(), func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		file := f.file
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(file)
	})
	mux.HandleFunc(api.SnapshotRestore.Mux(), testproc.HandleJSON(func(r *http.Request, req wire.RestoreRequest) (any, error) {
		f.mu.Lock()
		f.restores = append(f.restores, req)
		f.mu.Unlock()
		return wire.Restore{
			Restored:      !req.DryRun,
			Snapshot:      wire.SnapshotInfo{Index: 42, Term: 3, Version: "v9.9.9", Master: "m1", Counts: wire.SnapshotCounts{ActiveApps: 1, Queues: 1}},
			KillExecutors: []wire.ExecutorPlace{{AppID: "app-later", ExecutorID: 2, WorkerID: "w7"}},
			KillDrivers:   []wire.DriverPlace{},
			LostExecutors: []wire.ExecutorPlace{},
			GoneApps:      []string{"app-later"},
		}, nil
	}))
	peers := wire.RaftPeers{MasterID: "m2", LeaderID: "m1", Peers: []wire.RaftPeer{
		{ID: "m1", RaftAddr: "10.0.0.1:7177", APIAddr: "https://10.0.0.1:7077", Voter: true, Leader: true, Reachable: true, State: "Leader", Term: 3, CommitIndex: 50, AppliedIndex: 50, LastContact: "0", Version: "v9.9.9"},
		{ID: "m2", RaftAddr: "10.0.0.2:7177", APIAddr: "https://10.0.0.2:7077", Voter: true, Reachable: true, State: "Follower", Term: 3, CommitIndex: 50, AppliedIndex: 49, LastContact: "12ms", Version: "v9.9.8"},
		{ID: "m3", RaftAddr: "10.0.0.3:7177", Voter: true, Error: "connection refused"},
	}}
	mux.HandleFunc(api.RaftPeers.Mux(), func(w http.ResponseWriter, r *http.Request) { httpx.WriteJSON(w, http.StatusOK, peers) })
	mux.HandleFunc(api.RemoveRaftPeer.Mux(), func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("id") {
		case "m1":
			httpx.WriteErr(w, r, httpx.Coded(http.StatusConflict, wire.CodeWrongState, "master \"m1\" is the leader"))
		case "m3":
			httpx.WriteJSON(w, http.StatusOK, wire.RaftPeers{MasterID: "m1", LeaderID: "m1", Peers: peers.Peers[:2]})
		default:
			httpx.WriteErr(w, r, httpx.Coded(http.StatusNotFound, wire.CodeUnknownMaster, "no master %q in the Raft configuration", r.PathValue("id")))
		}
	})
	mux.HandleFunc(api.Cluster.Mux(), func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, wire.ClusterStatus{MasterID: "m1", Status: wire.MasterAlive, View: wire.ViewLeader, LeaderID: "m1", Version: "v9.9.9",
			Masters: []wire.MasterNode{{ID: "m1", RaftAddr: "10.0.0.1:7177", Leader: true, Voter: true, Version: "v9.9.9"}, {ID: "m2", RaftAddr: "10.0.0.2:7177", Voter: true, Version: "v9.9.8"}}})
	})
	f.srv = httptest.NewServer(httpx.RequireSecret(testSecret, mux))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *operatorMaster) env() []string {
	return []string{"BERTH_MASTER=" + f.srv.URL, "BERTH_SECRET=" + testSecret}
}

func (f *operatorMaster) restoreRequests() []wire.RestoreRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.RestoreRequest(nil), f.restores...)
}

// save writes the leader's file, checked, 0600; inspect reads it back.
func TestSnapshotSaveAndInspect(t *testing.T) {
	f := newOperatorMaster(t)
	path := filepath.Join(t.TempDir(), "backup.snap")
	res := berth(t, f.env(), "operator", "snapshot", "save", path)
	if res.Code != 0 || !strings.Contains(res.Stdout, "index 42, term 3") {
		t.Fatalf("save: %+v", res)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(data, f.file) {
		t.Fatalf("saved file: %v", err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("saved with mode %v", st.Mode())
	}
	res = berth(t, nil, "operator", "snapshot", "inspect", path)
	for _, want := range []string{"index:", "42", "term:", "v9.9.9", "(checked)", "1 active, 0 finished", "queues:"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("inspect lacks %q: %+v", want, res)
		}
	}
	res = berth(t, nil, "operator", "snapshot", "inspect", "--json", path)
	var info wire.SnapshotInfo
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &info) != nil || info.Index != 42 || info.Counts.Queues != 2 || len(info.SHA256) != 64 {
		t.Errorf("inspect --json: %+v", res)
	}

	// A leader that sends a damaged file: nothing is written.
	f.mu.Lock()
	f.file = f.file[:len(f.file)-30]
	f.mu.Unlock()
	other := filepath.Join(t.TempDir(), "damaged.snap")
	res = berth(t, f.env(), "operator", "snapshot", "save", other)
	if res.Code == 0 || !strings.Contains(res.Stderr, "snapshot truncated") {
		t.Errorf("save of a damaged answer: %+v", res)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a damaged answer was written: %v", err)
	}
}

// A file that is not a snapshot, truncated, corrupt or of a newer format
// is refused by inspect and restore with a clear error, and restore asks
// no master.
func TestSnapshotBadFilesRefused(t *testing.T) {
	f := newOperatorMaster(t)
	dir := t.TempDir()
	good := f.file
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)/2] ^= 1
	for name, c := range map[string]struct {
		data []byte
		says string
	}{
		"foreign":   {[]byte("#!/bin/sh\necho hi\n"), "not a berth snapshot"},
		"truncated": {good[:len(good)/2], "snapshot truncated"},
		"corrupt":   {corrupt, "snapshot corrupt"},
		"newer":     {bytes.Replace(good, []byte(fmt.Sprintf("berth-snapshot %d", snapfile.Format)), []byte(fmt.Sprintf("berth-snapshot %d", snapfile.Format+1)), 1), "newer format"},
		"crafted":   {craftedSnapshotFile(t), "a master would refuse to restore it: tenant x: unixUser root"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, c.data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"inspect", path}, {"restore", path, "--force"}} {
			res := berth(t, f.env(), append([]string{"operator", "snapshot"}, args...)...)
			if res.Code == 0 || !strings.Contains(res.Stderr, c.says) || !strings.Contains(res.Stderr, path) {
				t.Errorf("%s of a %s file: %+v", args[0], name, res)
			}
		}
	}
	if res := berth(t, nil, "operator", "snapshot", "inspect", filepath.Join(dir, "none")); res.Code == 0 || !strings.Contains(res.Stderr, "no such file") {
		t.Errorf("inspect of a missing file: %+v", res)
	}
	if n := len(f.restoreRequests()); n != 0 {
		t.Errorf("%d restores sent for bad files", n)
	}
}

// Without --force, restore prints what it would kill and stops, changing
// nothing; with it, it restores.
func TestSnapshotRestoreAsksForForce(t *testing.T) {
	f := newOperatorMaster(t)
	path := filepath.Join(t.TempDir(), "backup.snap")
	os.WriteFile(path, f.file, 0o600)
	res := berth(t, f.env(), "operator", "snapshot", "restore", path)
	if res.Code == 0 || !strings.Contains(res.Stderr, "not restored") || !strings.Contains(res.Stdout, "would be killed (1)") ||
		!strings.Contains(res.Stdout, "app-later") || !strings.Contains(res.Stdout, "w7") {
		t.Fatalf("restore without --force: %+v", res)
	}
	reqs := f.restoreRequests()
	if len(reqs) != 1 || !reqs[0].DryRun || !bytes.Equal(reqs[0].Snapshot, f.file) {
		t.Fatalf("requests without --force: %d, dry run %v", len(reqs), len(reqs) > 0 && reqs[0].DryRun)
	}
	res = berth(t, f.env(), "operator", "snapshot", "restore", "--force", path)
	if res.Code != 0 || !strings.Contains(res.Stdout, "Restored the snapshot of index 42") || !strings.Contains(res.Stdout, "are being killed (1)") {
		t.Fatalf("restore --force: %+v", res)
	}
	reqs = f.restoreRequests()
	if len(reqs) != 2 || reqs[1].DryRun {
		t.Errorf("requests with --force: %d", len(reqs))
	}
	res = berth(t, f.env(), "operator", "snapshot", "restore", path, "--force", "--json")
	var done wire.Restore
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &done) != nil || !done.Restored {
		t.Errorf("restore --force --json: %+v", res)
	}
}

// list-peers shows each master with its reachability and version;
// remove-peer names the master, and a refusal says why.
func TestRaftPeersCommands(t *testing.T) {
	f := newOperatorMaster(t)
	res := berth(t, f.env(), "operator", "raft", "list-peers")
	for _, want := range []string{"As master m2 sees it (leader m1)", "REACHABLE", "10.0.0.1:7177", "Leader", "12ms", "v9.9.8", "m3: connection refused"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("list-peers lacks %q: %+v", want, res)
		}
	}
	res = berth(t, f.env(), "operator", "raft", "list-peers", "--json")
	var peers wire.RaftPeers
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &peers) != nil || len(peers.Peers) != 3 || peers.Peers[2].Reachable {
		t.Errorf("list-peers --json: %+v", res)
	}
	if res := berth(t, f.env(), "operator", "raft", "remove-peer", "m3"); res.Code != 0 || !strings.Contains(res.Stdout, "removed master m3") {
		t.Errorf("remove-peer m3: %+v", res)
	}
	if res := berth(t, f.env(), "operator", "raft", "remove-peer", "m1"); res.Code == 0 || !strings.Contains(res.Stderr, "is the leader") || !strings.Contains(res.Stderr, "409") {
		t.Errorf("remove-peer of the leader: %+v", res)
	}
	if res := berth(t, f.env(), "operator", "raft", "remove-peer", "m9"); res.Code == 0 || !strings.Contains(res.Stderr, "no master") {
		t.Errorf("remove-peer of an unknown master: %+v", res)
	}
	if res := berth(t, f.env(), "operator", "raft", "remove-peer"); res.Code == 0 || !strings.Contains(res.Stderr, "usage") {
		t.Errorf("remove-peer without an id: %+v", res)
	}
}

// berth status gives each master's version, and says when they differ.
func TestStatusShowsVersions(t *testing.T) {
	f := newOperatorMaster(t)
	res := berth(t, f.env(), "status")
	for _, want := range []string{"version v9.9.9", "version v9.9.8", "different versions"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("status lacks %q: %+v", want, res)
		}
	}
}

// craftedSnapshotFile is a well-formed snapshot of a state no request
// could make: a tenant whose Unix user is root and token hash 00.
func craftedSnapshotFile(t *testing.T) []byte {
	t.Helper()
	s := persistence.NewState()
	s.Tenants["x"] = &persistence.TenantRecord{Name: "x", Queues: []string{"default"}, TokenHash: "00", UnixUser: "root"}
	data, _, err := persistence.EncodeSnapshotFile(s, snapfile.Meta{Index: 7, Term: 1, Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), Version: "v9.9.9", Master: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	return data
}
