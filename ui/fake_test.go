package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// fakeSource serves fixed data and records actions. With notLeader set,
// it is a follower: what only the leader answers fails with it.
type fakeSource struct {
	c         *wire.ClusterStatus
	events    []wire.AppEvent
	acted     []Action
	actErr    error
	logText   string
	queues    *wire.Queues
	notLeader error
}

func (f *fakeSource) Cluster(context.Context) (*wire.ClusterStatus, error) { return f.c, nil }
func (f *fakeSource) App(_ context.Context, id string) (*wire.AppStatus, []wire.AppEvent, error) {
	if f.notLeader != nil {
		return nil, nil, f.notLeader
	}
	for _, list := range [][]wire.AppStatus{f.c.ActiveApps, f.c.CompletedApps} {
		for i := range list {
			if list[i].ID == id {
				return &list[i], f.events, nil
			}
		}
	}
	return nil, nil, httpx.Coded(404, wire.CodeUnknownApp, "unknown application %q", id)
}
func (f *fakeSource) Driver(_ context.Context, id string) (*wire.DriverStatus, error) {
	if f.notLeader != nil {
		return nil, f.notLeader
	}
	for _, list := range [][]wire.DriverStatus{f.c.ActiveDrivers, f.c.CompletedDrivers} {
		for i := range list {
			if list[i].ID == id {
				return &list[i], nil
			}
		}
	}
	return nil, httpx.Coded(404, wire.CodeUnknownDriver, "unknown driver %q", id)
}
func (f *fakeSource) Queues(context.Context) (*wire.Queues, error) {
	if f.notLeader != nil {
		return nil, f.notLeader
	}
	if f.queues == nil {
		return &wire.Queues{Queues: []wire.QueueStatus{{Name: wire.DefaultQueue, Weight: 1, Preempt: true}}}, nil
	}
	return f.queues, nil
}
func (f *fakeSource) Raft() map[string]string {
	return map[string]string{"state": "Leader", "term": "3", "commit_index": "42", "applied_index": "42", "last_contact": "0"}
}

// act records an action as the master would carry it out.
func (f *fakeSource) act(a Action) error {
	if f.notLeader != nil {
		return f.notLeader
	}
	f.acted = append(f.acted, a)
	return f.actErr
}

func (f *fakeSource) KillApp(_ context.Context, id string) error {
	return f.act(Action{Kind: ActionKillApp, ID: id})
}
func (f *fakeSource) KillDriver(_ context.Context, id string) error {
	return f.act(Action{Kind: ActionKillDriver, ID: id})
}
func (f *fakeSource) SetExecutorLimit(_ context.Context, id string, limit int) error {
	return f.act(Action{Kind: ActionSetLimit, ID: id, Limit: limit})
}
func (f *fakeSource) DrainWorker(_ context.Context, id string) error {
	return f.act(Action{Kind: ActionDecommission, ID: id})
}
func (f *fakeSource) UndrainWorker(_ context.Context, id string) error {
	return f.act(Action{Kind: ActionUndrain, ID: id})
}
func (f *fakeSource) ClearWorker(_ context.Context, id string) error {
	return f.act(Action{Kind: ActionClearWorker, ID: id})
}
func (f *fakeSource) Log(context.Context, LogTarget, int) (string, error) {
	return f.logText, f.notLeader
}

// follower makes f a follower whose leader is at leader: its view of the
// cluster is its replica's (records only), and the leader's reads and
// actions are refused, as a master's are.
func (f *fakeSource) follower(leader string) {
	f.c.View, f.c.Leader, f.c.Status = wire.ViewFollower, leader, wire.MasterStandby
	for i := range f.c.ActiveApps {
		f.c.ActiveApps[i].Executors = nil
	}
	f.notLeader = &httpx.StatusError{Status: http.StatusTemporaryRedirect, Code: wire.CodeNotLeader, Message: "not the leader", Leader: leader}
}

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// cluster is a leader's view of workers workers (4 cores each) and apps
// apps, app i with executors of 1 and 2 cores on workers i and i+1.
func cluster(workers, apps int) *wire.ClusterStatus {
	c := &wire.ClusterStatus{MasterID: "m1", Status: wire.MasterAlive, View: wire.ViewLeader, LeaderID: "m1", Leader: "https://10.0.0.1:7077", Epoch: 3,
		Masters: []wire.MasterNode{{ID: "m1", RaftAddr: "10.0.0.1:7177", APIAddr: "https://10.0.0.1:7077", Leader: true, Voter: true}, {ID: "m2", RaftAddr: "10.0.0.2:7177", Voter: true}}}
	for i := range workers {
		c.Workers = append(c.Workers, wire.WorkerStatus{ID: fmt.Sprintf("w%05d", i), Address: fmt.Sprintf("http://10.1.%d.%d:7078", i/250, i%250),
			Cores: 4, MemoryMB: 8192, State: wire.WorkerAlive, LastHeartbeat: t0})
	}
	for i := range apps {
		a := wire.AppStatus{ID: fmt.Sprintf("app-20261124120000-%04d", i), Name: fmt.Sprintf("job %d", i), State: wire.AppRunning, SubmittedAt: t0, MaxCores: 3, MemoryPerExecutorMB: 1024}
		for j, cores := range []int{1, 2} {
			w := (i + j) % max(workers, 1)
			a.Executors = append(a.Executors, wire.ExecutorStatus{ID: j, WorkerID: fmt.Sprintf("w%05d", w), Cores: cores, MemoryMB: 1024, State: wire.ExecutorRunning})
			a.CoresGranted += cores
		}
		c.ActiveApps = append(c.ActiveApps, a)
	}
	return c
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
