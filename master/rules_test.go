package master

import "github.com/berth-cluster/berth/scheduler"

// The relaunch backoff's and a stable executor's rules moved to scheduler
// (scheduler/failures.go, tested there, TestRelaunchBackoffDoubles among
// them); the master's tests written before the move name their constants
// as they did.
const relaunchBackoffMax = scheduler.RelaunchBackoffMax

const executorStableAfter = scheduler.StableAfter
