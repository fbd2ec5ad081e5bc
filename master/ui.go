package master

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/berth-cluster/berth/ui"
	"github.com/berth-cluster/berth/wire"
)

// recentEventsKept bounds the events an app keeps for its UI page.
const recentEventsKept = 50

// mountUI serves the web UI (package ui) over this master on mux: / goes
// to its pages.
func (m *Master) mountUI(mux *http.ServeMux) { ui.Mount(mux, wire.MasterAPI.UI, m.uiHandler()) }

func (m *Master) uiHandler() http.Handler {
	return ui.Handler(ui.Options{
		Source: uiSource{m}, Secret: m.cfg.Secret, Sessions: m.sessions, Secure: m.cfg.TLS != nil,
		SignInNeeded: m.cfg.Secret != "" || m.cfg.TLS != nil, Log: m.log,
		SignInCode: m.redeemSignInCode, TenantSignIn: m.tenantSignIn,
	})
}

// uiSource is what the UI reads and does, through the loop as the API does.
type uiSource struct{ m *Master }

func (s uiSource) Cluster(ctx context.Context) (*wire.ClusterStatus, error) {
	cs, err := s.m.clusterView(ctx, true, true)
	if err == nil {
		s.m.withRaftFigures(ctx, cs)
	}
	return cs, err
}

// App is the leader's view of an app and its recent events; a follower
// answers not_leader (its pages show the app's record from Cluster, its
// replica).
func (s uiSource) App(ctx context.Context, id string) (*wire.AppStatus, []wire.AppEvent, error) {
	type answer struct {
		st     wire.AppStatus
		events []wire.AppEvent
	}
	a, err := query(ctx, s.m, func(c *core) (answer, error) {
		st, err := c.app(id)
		if err != nil {
			return answer{}, err
		}
		var events []wire.AppEvent
		if a := c.findApp(id); a != nil {
			events = slices.Clone(a.recent)
		}
		return answer{st, events}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return &a.st, a.events, nil
}

func (s uiSource) Driver(ctx context.Context, id string) (*wire.DriverStatus, error) {
	d, err := query(ctx, s.m, func(c *core) (wire.DriverStatus, error) { return c.driver(id) })
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// Queues is the leader's queues, as GET /v1/queues answers: what each
// holds and is owed is its scheduling rounds'; a follower answers
// not_leader (its page links to the leader's).
func (s uiSource) Queues(ctx context.Context) (*wire.Queues, error) {
	qs, err := query(ctx, s.m, (*core).queuesStatus)
	if err != nil {
		return nil, err
	}
	return &qs, nil
}

func (s uiSource) Raft() map[string]string {
	if s.m.repl == nil {
		return nil
	}
	return s.m.repl.Stats()
}

// The operator's actions, each as its API route would carry it out.

func (s uiSource) KillApp(ctx context.Context, id string) error {
	return uiAct(ctx, s.m, "app id", id, func(c *core, r reply[wire.AppStatus]) { c.endApp(id, wire.AppKilled, "killed from the web UI", r) })
}

func (s uiSource) KillDriver(ctx context.Context, id string) error {
	return uiAct(ctx, s.m, "driver id", id, func(c *core, r reply[wire.DriverStatus]) { c.killDriver(id, r) })
}

func (s uiSource) SetExecutorLimit(ctx context.Context, id string, limit int) error {
	if err := validateExecutorLimit(wire.ExecutorLimit{Limit: limit}); err != nil {
		return err
	}
	return uiAct(ctx, s.m, "app id", id, func(c *core, r reply[wire.ExecutorLimit]) { c.setExecutorLimit(id, limit, r) })
}

func (s uiSource) DrainWorker(ctx context.Context, id string) error {
	return uiAct(ctx, s.m, "worker id", id, func(c *core, r reply[wire.WorkerStatus]) { c.drainWorker(id, DefaultDrainDeadline, r) })
}

func (s uiSource) UndrainWorker(ctx context.Context, id string) error {
	return uiAct(ctx, s.m, "worker id", id, func(c *core, r reply[wire.WorkerStatus]) { c.undrainWorker(id, r) })
}

func (s uiSource) ClearWorker(ctx context.Context, id string) error {
	return uiAct(ctx, s.m, "worker id", id, func(c *core, r reply[wire.WorkerStatus]) { r(c.clearWorker(id)) })
}

// uiAct checks the id of kind, then runs the action in the loop.
func uiAct[T any](ctx context.Context, m *Master, kind, id string, fn func(c *core, r reply[T])) error {
	if err := checkID(kind, id); err != nil {
		return err
	}
	ctx = audited(ctx, wire.MasterAPI.UIActions.Endpoint, id)
	_, err := call(ctx, m, fn)
	if err != nil {
		m.auditRefusal(ctx, err)
	}
	return err
}

// Log is the last tail bytes of a process's log, through its worker
// (found by the leader, or in a follower's replica: uilogs.go).
func (s uiSource) Log(ctx context.Context, t ui.LogTarget, tail int) (string, error) {
	if err := checkStream(t.Stream); err != nil {
		return "", err
	}
	url, err := s.uiLogURL(ctx, t)
	if err != nil {
		return "", err
	}
	resp, err := s.m.openWorkerLog(ctx, url, int64(tail), "")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(tail)+1))
	if err != nil {
		return "", fmt.Errorf("reading the log: %w", err)
	}
	return string(data), nil
}
