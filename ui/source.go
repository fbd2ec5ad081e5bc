// Package ui is the web UI of berth's master and worker: server-rendered
// pages (html/template, assets embedded), usable with JavaScript off and
// refreshing themselves where it is on. The daemons mount it at /ui/ on
// their API port, behind the same credentials as the API (see Mount).
package ui

import (
	"context"
	"fmt"
	"net/url"

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
	// Queues is every queue with what it holds, is owed and waits for:
	// the leader's, worked out at its scheduling rounds; a follower fails
	// with not_leader (or no_leader), as GET /v1/queues does.
	Queues(ctx context.Context) (*wire.Queues, error)
	// Raft is this master's Raft figures (term, commit and applied index,
	// last contact, state), nil without Raft.
	Raft() map[string]string
	// The operator's actions (actionKinds says which form asks for which).
	KillApp(ctx context.Context, id string) error
	KillDriver(ctx context.Context, id string) error
	SetExecutorLimit(ctx context.Context, appID string, limit int) error
	DrainWorker(ctx context.Context, id string) error // with the master's default deadline
	UndrainWorker(ctx context.Context, id string) error
	// ClearWorker (berth worker clear, POST /v1/workers/{id}/clear): its
	// unhealthy mark ends, and so does every app's exclusion from it
	// (docs/HEALTH.md).
	ClearWorker(ctx context.Context, id string) error
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
	ActionClearWorker  ActionKind = "clear-worker" // its unhealthy mark and the apps' exclusions from it end
)

// actionKind is everything about one kind of action, in one place: what
// it acts on, what its confirmation asks, and what it does.
type actionKind struct {
	on       entity
	limit    bool // its form carries an executor limit
	question func(a Action, withLimit bool) string
	do       func(ctx context.Context, s Source, a Action) error
}

// actionKinds is the one table of the UI's actions.
var actionKinds = map[ActionKind]actionKind{
	ActionKillApp: {on: entityApp,
		question: func(a Action, _ bool) string {
			return fmt.Sprintf("Kill application %s and all its executors?", a.ID)
		},
		do: func(ctx context.Context, s Source, a Action) error { return s.KillApp(ctx, a.ID) }},
	ActionKillDriver: {on: entityDriver,
		question: func(a Action, _ bool) string { return fmt.Sprintf("Kill driver %s?", a.ID) },
		do:       func(ctx context.Context, s Source, a Action) error { return s.KillDriver(ctx, a.ID) }},
	ActionSetLimit: {on: entityApp, limit: true,
		question: func(a Action, withLimit bool) string {
			if withLimit {
				return fmt.Sprintf("Set the executor limit of %s to %d? Executors beyond it are not replaced when they end.", a.ID, a.Limit)
			}
			return fmt.Sprintf("Change the executor limit of %s?", a.ID)
		},
		do: func(ctx context.Context, s Source, a Action) error { return s.SetExecutorLimit(ctx, a.ID, a.Limit) }},
	ActionDecommission: {on: entityWorker,
		question: func(a Action, _ bool) string {
			return fmt.Sprintf("Decommission worker %s? It takes no new work; what runs there has 10 minutes to end, then is moved elsewhere.", a.ID)
		},
		do: func(ctx context.Context, s Source, a Action) error { return s.DrainWorker(ctx, a.ID) }},
	ActionUndrain: {on: entityWorker,
		question: func(a Action, _ bool) string { return fmt.Sprintf("End the drain of %s? It takes work again.", a.ID) },
		do:       func(ctx context.Context, s Source, a Action) error { return s.UndrainWorker(ctx, a.ID) }},
	ActionClearWorker: {on: entityWorker,
		question: func(a Action, _ bool) string {
			return fmt.Sprintf("Clear worker %s? Its failures are forgotten: it is no longer unhealthy, no app is kept off it, and new work is placed there again.", a.ID)
		},
		do: func(ctx context.Context, s Source, a Action) error { return s.ClearWorker(ctx, a.ID) }},
}

// entity is what an action acts on.
type entity int

const (
	entityApp entity = iota
	entityDriver
	entityWorker
)

// page is the UI page of the entity id.
func (e entity) page(id string) string {
	return [...]string{"/ui/apps/", "/ui/drivers/", "/ui/workers/"}[e] + url.PathEscape(id)
}

// LogTarget names a process's log: an app's executor or a driver.
type LogTarget struct {
	AppID    string // with Executor; "" for a driver
	Executor int
	DriverID string
	Stream   string // stdout or stderr
}
