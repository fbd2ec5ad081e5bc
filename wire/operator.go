package wire

import "time"

// The operator's routes (berth operator): snapshots of the cluster's
// state, and the masters' Raft membership. See docs/OPERATIONS.md.

// SnapshotFile is the answer of GET /v1/operator/snapshot: a snapshot
// file (package persistence/snapfile), as application/octet-stream, taken
// from the leader's state once every write committed before the request
// is applied.
type SnapshotFile struct{}

// MaxSnapshotBytes bounds the state a snapshot may hold (its body), and so
// what restore accepts.
const MaxSnapshotBytes = 1 << 30

// RestoreRequest is POST /v1/operator/snapshot/restore.
type RestoreRequest struct {
	// Snapshot is the whole file, as save wrote it (base64 in JSON).
	Snapshot []byte `json:"snapshot"`
	// DryRun: check the file and answer what a restore would do, changing
	// nothing.
	DryRun bool `json:"dryRun,omitempty"`
}

// Restore is the answer of a restore (or of its dry run): what the file
// holds, and what replacing the state with it does to what runs now.
type Restore struct {
	// Restored: the state was replaced (false for a dry run).
	Restored bool         `json:"restored"`
	Snapshot SnapshotInfo `json:"snapshot"`
	// KillExecutors and KillDrivers run now and are unknown to the
	// snapshot (or ended in it): their workers are told to kill them.
	KillExecutors []ExecutorPlace `json:"killExecutors"`
	KillDrivers   []DriverPlace   `json:"killDrivers"`
	// LostExecutors are in the snapshot but do not run now: once their
	// workers have answered the leader they are LOST, and their apps get
	// others.
	LostExecutors []ExecutorPlace `json:"lostExecutors"`
	// GoneApps and GoneDrivers are active now and absent from the
	// snapshot, or ended in it.
	GoneApps    []string `json:"goneApps"`
	GoneDrivers []string `json:"goneDrivers"`
}

// ExecutorPlace is an executor and the worker it runs on.
type ExecutorPlace struct {
	AppID      string `json:"appId"`
	ExecutorID int    `json:"executorId"`
	WorkerID   string `json:"workerId"`
}

// DriverPlace is a driver and the worker it runs on.
type DriverPlace struct {
	DriverID string `json:"driverId"`
	WorkerID string `json:"workerId"`
}

// SnapshotInfo describes a snapshot file: its metadata, checksum and what
// its state holds.
type SnapshotInfo struct {
	Format int `json:"format"`
	// Index and Term of the last Raft log entry the state includes (0 from
	// a master that runs alone).
	Index uint64    `json:"index"`
	Term  uint64    `json:"term"`
	Time  time.Time `json:"time"`
	// Version and Commit: the build of the master that took it; Master,
	// its id.
	Version string         `json:"version"`
	Commit  string         `json:"commit,omitempty"`
	Master  string         `json:"master"`
	Size    int64          `json:"size"`   // bytes of its state
	SHA256  string         `json:"sha256"` // of the file
	Counts  SnapshotCounts `json:"counts"`
}

// SnapshotCounts is what a snapshot's state holds.
type SnapshotCounts struct {
	Epoch            uint64 `json:"epoch"`
	ActiveApps       int    `json:"activeApps"`
	FinishedApps     int    `json:"finishedApps"`
	ActiveDrivers    int    `json:"activeDrivers"`
	FinishedDrivers  int    `json:"finishedDrivers"`
	Workers          int    `json:"workers"`
	Executors        int    `json:"executors"`
	Queues           int    `json:"queues"`
	Tenants          int    `json:"tenants"`
	Masters          int    `json:"masters"`
	AuditEntries     int    `json:"auditEntries"`
	NextAppNumber    int    `json:"nextAppNumber"`
	NextDriverNumber int    `json:"nextDriverNumber"`
}

// RaftPeers is GET /v1/operator/raft/peers (and the answer of a removal):
// the Raft configuration as the master that answered knows it, each master
// asked for its own figures.
type RaftPeers struct {
	MasterID string     `json:"masterId"`           // the master that answered
	LeaderID string     `json:"leaderId,omitempty"` // as it knows it
	Peers    []RaftPeer `json:"peers"`
}

// RaftPeer is one master of the Raft configuration.
type RaftPeer struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	APIAddr  string `json:"apiAddr,omitempty"`
	Voter    bool   `json:"voter"`
	Leader   bool   `json:"leader"`
	// Reachable: it answered the master that answered, just now, with
	// its figures below (else Error says why not).
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Its own figures: Raft state, term, indexes, and LastContact, how
	// long since it last heard from the leader ("0" on the leader).
	State        string `json:"state,omitempty"`
	Term         uint64 `json:"term,omitempty"`
	CommitIndex  uint64 `json:"commitIndex,omitempty"`
	AppliedIndex uint64 `json:"appliedIndex,omitempty"`
	LastContact  string `json:"lastContact,omitempty"`
	Version      string `json:"version,omitempty"`
}
