package master

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

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
		st     *wire.AppStatus
		events []wire.AppEvent
	}
	v, err := s.m.query(ctx, func(c *core) (any, error) {
		st, err := c.app(id)
		if err != nil {
			return nil, err
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
	a := v.(answer)
	return a.st, a.events, nil
}

func (s uiSource) Driver(ctx context.Context, id string) (*wire.DriverStatus, error) {
	v, err := s.m.query(ctx, func(c *core) (any, error) { return c.driver(id) })
	if err != nil {
		return nil, err
	}
	return v.(*wire.DriverStatus), nil
}

func (s uiSource) Raft() map[string]string {
	if r, ok := s.m.engine.(interface{ Stats() map[string]string }); ok {
		return r.Stats()
	}
	return nil
}

// Act runs an operator's action as its API route would.
func (s uiSource) Act(ctx context.Context, a ui.Action) error {
	if err := checkIDFor(a); err != nil {
		return err
	}
	_, err := s.m.call(ctx, func(c *core, reply func(any, error)) {
		switch a.Kind {
		case ui.ActionKillApp:
			c.endApp(a.ID, wire.AppKilled, "killed from the web UI", reply)
		case ui.ActionKillDriver:
			c.killDriver(a.ID, reply)
		case ui.ActionSetLimit:
			c.setExecutorLimit(a.ID, a.Limit, reply)
		case ui.ActionDecommission:
			c.drainWorker(a.ID, DefaultDrainDeadline, reply)
		case ui.ActionUndrain:
			c.undrainWorker(a.ID, reply)
		default:
			reply(nil, badRequest("unknown action %q", a.Kind))
		}
	})
	return err
}

func checkIDFor(a ui.Action) error {
	kind := map[ui.ActionKind]string{ui.ActionKillApp: "app id", ui.ActionSetLimit: "app id", ui.ActionKillDriver: "driver id", ui.ActionDecommission: "worker id", ui.ActionUndrain: "worker id"}[a.Kind]
	if kind == "" {
		return badRequest("unknown action %q", a.Kind)
	}
	if a.Kind == ui.ActionSetLimit {
		if err := validateExecutorLimit(wire.ExecutorLimit{Limit: a.Limit}); err != nil {
			return err
		}
	}
	return checkID(kind, a.ID)
}

// Log is the last tail bytes of a process's log, through its worker.
func (s uiSource) Log(ctx context.Context, t ui.LogTarget, tail int) (string, error) {
	if err := checkStream(t.Stream); err != nil {
		return "", err
	}
	target := func(c *core) (string, error) {
		addr, err := c.driverWorkerAddress(t.DriverID)
		return addr + wire.WorkerAPI.DriverLogs.Path(t.DriverID, t.Stream), err
	}
	if t.AppID != "" {
		target = func(c *core) (string, error) {
			addr, err := c.executorWorkerAddress(t.AppID, t.Executor)
			return addr + wire.WorkerAPI.ExecutorLogs.Path(t.AppID, strconv.Itoa(t.Executor), t.Stream), err
		}
	}
	resp, err := s.m.openLog(ctx, target, int64(tail))
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
