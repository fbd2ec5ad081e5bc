package wire

import (
	"slices"
	"strings"
	"time"
)

// GET /v1/cluster: the leader's (or a follower's) view of the cluster, and
// its count of the workers and their custom resources.

// ClusterStatus is GET /v1/cluster.
type ClusterStatus struct {
	MasterID string       `json:"masterId"`
	Status   MasterStatus `json:"status"`
	// Version is the build of the master that answered (each master's is
	// in Masters).
	Version string `json:"version,omitempty"`
	// View is "leader" when this master leads, "follower" when the answer is
	// a follower's replica (durable state only: no executors, no heartbeats).
	View     string `json:"view"`
	Leader   string `json:"leader,omitempty"` // API address of the leader, if known
	LeaderID string `json:"leaderId,omitempty"`
	Epoch    uint64 `json:"epoch"`
	// LeaderSince is when this master's leadership began (leader view only).
	LeaderSince *time.Time `json:"leaderSince,omitempty"`
	// LeaderContact is when this master last heard from a leader
	// (follower view only; absent if it never has since it started): its
	// replica holds what was committed until about then.
	LeaderContact *time.Time `json:"leaderContact,omitempty"`

	// WorkerSummary counts the workers by state, with their cores and
	// memory; always set. Workers lists them, unless ?workers=false asked
	// for the summary alone (a cluster of 100,000 workers).
	WorkerSummary    WorkerSummary  `json:"workerSummary"`
	Workers          []WorkerStatus `json:"workers"`
	ActiveApps       []AppStatus    `json:"activeApps"`
	CompletedApps    []AppStatus    `json:"completedApps"`
	ActiveDrivers    []DriverStatus `json:"activeDrivers"`
	CompletedDrivers []DriverStatus `json:"completedDrivers"`
	Masters          []MasterNode   `json:"masters,omitempty"`
}

// WorkerSummary is ClusterStatus's count of the workers.
type WorkerSummary struct {
	Total           int `json:"total"`
	Alive           int `json:"alive"`
	Decommissioning int `json:"decommissioning"`
	Dead            int `json:"dead"`
	Other           int `json:"other"` // UNKNOWN (recovery), DECOMMISSIONED
	Cores           int `json:"cores"`
	CoresUsed       int `json:"coresUsed"`
	MemoryMB        int `json:"memoryMB"`
	MemoryUsedMB    int `json:"memoryUsedMB"`
	// Resources: the custom resources the workers offer, by name.
	Resources []ResourceTotal `json:"resources,omitempty"`
}

// ResourceTotal is one custom resource over the workers: the addresses
// they offer (as Cores counts every worker's cores), and those wholly free
// on ALIVE workers, which a new executor or driver can have.
type ResourceTotal struct {
	Name      string `json:"name"`
	Addresses int    `json:"addresses"`
	Free      int    `json:"free"`
}

// Add counts one worker.
func (s *WorkerSummary) Add(w WorkerStatus) {
	s.Total++
	switch w.State {
	case WorkerAlive:
		s.Alive++
	case WorkerDecommissioning:
		s.Decommissioning++
	case WorkerDead:
		s.Dead++
	default:
		s.Other++
	}
	s.Cores += w.Cores
	s.CoresUsed += w.CoresUsed
	s.MemoryMB += w.MemoryMB
	s.MemoryUsedMB += w.MemoryUsedMB
	s.Resources = AddResourceUses(s.Resources, w.State, w.Resources)
}

// AddResourceUses counts one worker's resources (in state) into ts: every
// address it offers, and the wholly free ones when it is ALIVE.
func AddResourceUses(ts []ResourceTotal, state WorkerState, rs []ResourceUse) []ResourceTotal {
	for _, r := range rs {
		free := 0
		if state == WorkerAlive {
			free = r.Free
		}
		ts = AddResourceTotal(ts, r.Name, len(r.Addresses), free)
	}
	return ts
}

// AddResourceTotal counts addresses and free ones of resource name in ts,
// the names kept in order, and returns ts.
func AddResourceTotal(ts []ResourceTotal, name string, addresses, free int) []ResourceTotal {
	i, found := slices.BinarySearchFunc(ts, name, func(t ResourceTotal, name string) int { return strings.Compare(t.Name, name) })
	if !found {
		ts = slices.Insert(ts, i, ResourceTotal{Name: name})
	}
	ts[i].Addresses += addresses
	ts[i].Free += free
	return ts
}
