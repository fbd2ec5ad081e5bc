// Package ui is the web UI of berth's master and worker: server-rendered
// pages (html/template, assets embedded), usable with JavaScript off and
// refreshing themselves where it is on. The daemons mount it at /ui/ on
// their API port, behind the same credentials as the API (see Mount).
package ui

import (
	"context"

	"github.com/berth-cluster/berth/wire"
)

// Source is what the master's pages read and do. The master implements it
// over its loop; tests implement it with fixed data.
type Source interface {
	// Cluster is the cluster as this master sees it, completed apps and
	// drivers included: the leader's view, or a follower's replica
	// (View says which).
	Cluster(ctx context.Context) (*wire.ClusterStatus, error)
	// App is one app and its recent events, newest last.
	App(ctx context.Context, id string) (*wire.AppStatus, []wire.AppEvent, error)
	Driver(ctx context.Context, id string) (*wire.DriverStatus, error)
	// Raft is this master's Raft figures (term, commit and applied index,
	// last contact, state), nil without Raft.
	Raft() map[string]string
	// Act carries out an operator's action.
	Act(ctx context.Context, a Action) error
	// Log is the last tail bytes of a process's stdout or stderr.
	Log(ctx context.Context, t LogTarget, tail int) (string, error)
}

// Action is what an operator asks from a page.
type Action struct {
	Kind  ActionKind
	ID    string // the app, driver or worker
	Limit int    // ActionSetLimit
}

type ActionKind string

const (
	ActionKillApp      ActionKind = "kill-app"
	ActionKillDriver   ActionKind = "kill-driver"
	ActionSetLimit     ActionKind = "set-limit"
	ActionDecommission ActionKind = "decommission" // a drain with the master's default deadline
	ActionUndrain      ActionKind = "undrain"
)

// LogTarget names a process's log: an app's executor or a driver.
type LogTarget struct {
	AppID    string // with Executor; "" for a driver
	Executor int
	DriverID string
	Stream   string // stdout or stderr
}
