package master

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Handler is the master's HTTP API, registered from its declaration
// (wire.MasterAPI): the JSON routes here, the event stream (streams.go), the
// log proxy (logs.go) and Raft membership (membership.go). Each route is
// served to the callers its declaration admits (auth.go).
func (m *Master) Handler() http.Handler {
	api := wire.MasterAPI
	mux := http.NewServeMux()
	mux.HandleFunc(api.Health.Mux(), func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc(api.Ready.Mux(), m.readyz)
	mux.HandleFunc(api.Cluster.Mux(), m.getCluster)

	mux.HandleFunc(api.RegisterApp.Mux(), func(w http.ResponseWriter, r *http.Request) {
		submit(m, w, r, api.RegisterApp.Endpoint, m.cfg.checkAppSubmission, (*core).registerApp)
	})
	serve(m, mux, api.App, nil, readEntity(m, "app id", func(c *core, id string, _ wire.None, r reply[wire.AppStatus]) { r(c.app(id)) }))
	serve(m, mux, api.KillApp, nil, onEntity(m, "app id", func(c *core, id string, _ wire.None, r reply[wire.AppStatus]) {
		c.endApp(id, wire.AppKilled, "killed by request", r)
	}))
	serve(m, mux, api.UnregisterApp, nil, onEntity(m, "app id", func(c *core, id string, _ wire.None, r reply[wire.AppStatus]) {
		c.endApp(id, wire.AppFinished, "unregistered by its client", r)
	}))
	serve(m, mux, api.AppHeartbeat, nil, onEntity(m, "app id", func(c *core, id string, _ wire.None, r reply[wire.None]) {
		r(wire.None{}, c.appHeartbeat(id))
	}))
	serve(m, mux, api.SetExecutorLimit, validateExecutorLimit, onEntity(m, "app id", func(c *core, id string, l wire.ExecutorLimit, r reply[wire.ExecutorLimit]) {
		c.setExecutorLimit(id, l.Limit, r)
	}))
	serve(m, mux, api.KillExecutors, validateKillExecutors, onEntity(m, "app id", func(c *core, id string, k wire.KillExecutors, r reply[wire.KillExecutors]) {
		c.killExecutors(id, k.ExecutorIDs, r)
	}))
	mux.HandleFunc(api.AppEvents.Mux(), m.appEvents)
	mux.HandleFunc(api.ExecutorLogs.Mux(), m.executorLogs)

	mux.HandleFunc(api.SubmitDriver.Mux(), func(w http.ResponseWriter, r *http.Request) {
		submit(m, w, r, api.SubmitDriver.Endpoint, m.cfg.checkDriverSubmission, (*core).submitDriver)
	})
	serve(m, mux, api.Driver, nil, readEntity(m, "driver id", func(c *core, id string, _ wire.None, r reply[wire.DriverStatus]) { r(c.driver(id)) }))
	serve(m, mux, api.KillDriver, nil, onEntity(m, "driver id", func(c *core, id string, _ wire.None, r reply[wire.DriverStatus]) { c.killDriver(id, r) }))
	mux.HandleFunc(api.DriverLogs.Mux(), m.driverLogs)

	serve(m, mux, api.RegisterWorker, validateRegistration, fromWorker(func(r *http.Request, req wire.RegisterWorker) (wire.RegisteredWorker, error) {
		if p := httpx.PrincipalOf(r.Context()); p.Kind == httpx.KindWorker && req.ID != p.Name {
			return wire.RegisteredWorker{}, forbidden("the certificate of worker %q may not register worker %q", p.Name, req.ID)
		}
		if m.cfg.TLS != nil && !strings.HasPrefix(req.Address, "https://") {
			return wire.RegisteredWorker{}, badRequest("address %q: this cluster runs TLS, a worker's address is https", req.Address)
		}
		return call(r.Context(), m, func(c *core, r reply[wire.RegisteredWorker]) { c.registerWorker(req, r) })
	}, registeringWorker))
	serve(m, mux, api.WorkerHeartbeat, validateHeartbeat, fromWorker(onEntity(m, "worker id", func(c *core, id string, hb wire.Heartbeat, r reply[wire.HeartbeatReply]) {
		r(c.heartbeat(id, hb))
	}), pathWorkerUnlessReconnect))
	serve(m, mux, api.ExecutorStateReport, validateExecutorState, onEntity(m, "worker id", (*core).executorStateChanged))
	serve(m, mux, api.DriverStateReport, validateDriverState, onEntity(m, "worker id", (*core).driverStateChanged))
	serve(m, mux, api.LatestState, validateLatestState, fromWorker(onEntity(m, "worker id", func(c *core, id string, st wire.WorkerLatestState, r reply[wire.LatestStateReply]) {
		r(c.workerLatestState(id, st))
	}), pathWorker))
	serve(m, mux, api.Decommission, nil, onEntity(m, "worker id", func(c *core, id string, _ wire.None, r reply[wire.None]) {
		r(wire.None{}, c.decommissionWorker(id))
	}))
	serve(m, mux, api.Drain, validateDrain, onEntity(m, "worker id", func(c *core, id string, d wire.DrainRequest, r reply[wire.WorkerStatus]) {
		c.drainWorker(id, time.Duration(d.DeadlineSeconds)*time.Second, r)
	}))
	serve(m, mux, api.Undrain, nil, onEntity(m, "worker id", func(c *core, id string, _ wire.None, r reply[wire.WorkerStatus]) {
		c.undrainWorker(id, r)
	}))
	serve(m, mux, api.ClearWorker, nil, onEntity(m, "worker id", func(c *core, id string, _ wire.None, r reply[wire.WorkerStatus]) {
		r(c.clearWorker(id))
	}))
	serve(m, mux, api.WorkerLeft, nil, onEntity(m, "worker id", func(c *core, id string, _ wire.None, r reply[wire.None]) {
		c.workerLeft(id, r)
	}))

	serve(m, mux, api.JoinMaster, validateJoin, m.join)
	serve(m, mux, api.LeaveMaster, validateLeave, m.leave)
	serve(m, mux, api.RaftStatus, nil, m.serveRaftStatus)
	serve(m, mux, api.EndUISession, nil, m.serveEndSession)
	serve(m, mux, api.SignInLink, nil, m.serveSignInLink)
	m.sharedRoutes(mux)
	m.operatorRoutes(mux)
	mux.Handle(api.Metrics.Mux(), m.metricsHandler())
	m.mountUI(mux)
	return m.core.metrics.instrument(mux, m.authorize(mux))
}

// serve registers a JSON route: the body is decoded strictly into a Req
// (none for wire.None) and checked (400, nothing changed), then h answers
// with the route's answer type, written as JSON, or an error.
//
// A request that may change state carries its audit tag (audit.go): its
// first write takes the entry along; a refusal writes one of its own.
func serve[Req, Resp any](m *Master, mux *http.ServeMux, route wire.Route[Req, Resp], check func(Req) error, h func(r *http.Request, in Req) (Resp, error)) {
	mux.HandleFunc(route.Mux(), func(w http.ResponseWriter, r *http.Request) {
		if route.Method != http.MethodGet {
			r = r.WithContext(audited(r.Context(), route.Endpoint, r.PathValue("id")))
		}
		var in Req
		if _, none := any(in).(wire.None); !none {
			var ok bool
			if in, ok = decode(m, w, r, check); !ok {
				return
			}
		}
		out, err := h(r, in)
		if err != nil {
			m.auditRefusal(r.Context(), err)
		}
		respond(w, r, out, err)
	})
}

// decode reads the body into v and checks it; false means the answer (a
// refusal, audited) was already written.
func decode[T any](m *Master, w http.ResponseWriter, r *http.Request, check func(T) error) (T, bool) {
	var v T
	err := httpx.DecodeJSON(w, r, &v)
	if tag := auditOf(r.Context()); err == nil && tag != nil {
		// A refused submission has no id yet: its entry names what it
		// asked for (its target was "-"); a committed one names its id.
		tag.refusedTarget = submissionName(v)
	}
	if err == nil && check != nil {
		err = check(v)
	}
	if err != nil {
		m.auditRefusal(r.Context(), err)
		httpx.WriteErr(w, r, err)
		return v, false
	}
	return v, true
}

// onEntity serves a route on one entity named by the path's {id} (an app,
// a driver or a worker, as kind says): the id is checked, then apply runs
// in the loop and replies.
func onEntity[T, R any](m *Master, kind string, apply func(c *core, id string, in T, r reply[R])) func(*http.Request, T) (R, error) {
	return func(r *http.Request, in T) (R, error) {
		id := r.PathValue("id")
		if err := checkID(kind, id); err != nil {
			var zero R
			return zero, err
		}
		return call(r.Context(), m, func(c *core, r reply[R]) { apply(c, id, in, r) })
	}
}

// readEntity is onEntity for a read answered as the leader's view: the
// lease must still hold once the loop has answered (stillLeading).
func readEntity[T, R any](m *Master, kind string, apply func(c *core, id string, in T, r reply[R])) func(*http.Request, T) (R, error) {
	h := onEntity(m, kind, apply)
	return func(r *http.Request, in T) (R, error) {
		v, err := h(r, in)
		return stillLeading(m, v, err)
	}
}

// respond writes v as JSON, or err with its status and code. A redirect to
// the leader points at the same path there, so plain HTTP clients (curl -L)
// can follow it.
func respond(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoLeader, "request abandoned: %v", err)
		}
		httpx.WriteErr(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, v)
}

// submissionName is what an audit entry of a refused submission names:
// "name:NAME" (an app's or a driver's name).
func submissionName(desc any) string {
	var name string
	var argv []string
	switch d := desc.(type) {
	case wire.AppDescription:
		name, argv = d.Name, d.Command
	case wire.DriverDescription:
		name, argv = d.Name, d.Command
	}
	switch {
	case name != "":
		return "name:" + name
	case len(argv) > 0 && argv[0] != "":
		return "command:" + argv[0] // a nameless one: what it would have run
	}
	return ""
}

// submit serves a submission: its idempotency key and description are
// checked (400), the description hashed off the loop, then the loop
// creates it (or answers a repeat).
func submit[T any](m *Master, w http.ResponseWriter, r *http.Request, route wire.Endpoint, validate func(T) error,
	create func(c *core, desc T, idem keyed, r reply[wire.Submitted])) {
	r = r.WithContext(audited(r.Context(), route, ""))
	key, err := checkIdempotencyKey(r.Header.Values(wire.IdempotencyKeyHeader))
	if err != nil {
		m.auditRefusal(r.Context(), err)
		httpx.WriteErr(w, r, err)
		return
	}
	desc, ok := decode(m, w, r, validate)
	if !ok {
		return
	}
	idem := keyedRequest(key, desc)
	idem.owner, idem.tenant = ownerOf(r), tenantOf(r)
	switch {
	case idem.key == "":
	case idem.owner != "":
		// A driver's keys are its own: another's cannot find its app.
		idem.key = idem.owner + "/" + idem.key
	case idem.tenant != "":
		idem.key = "tenant:" + idem.tenant + "/" + idem.key // and a tenant's
	}
	v, err := call(r.Context(), m, func(c *core, r reply[wire.Submitted]) { create(c, desc, idem, r) })
	if err != nil {
		m.auditRefusal(r.Context(), err)
	}
	respond(w, r, v, err)
}

func (m *Master) readyz(w http.ResponseWriter, r *http.Request) {
	if m.lease.leading.Load() {
		if err := m.lease.confirm(r.Context()); err != nil {
			httpx.WriteErr(w, r, httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoLeader, "master could not confirm it leads: %v", err))
			return
		}
	}
	status, err := query(r.Context(), m, func(c *core) (wire.MasterStatus, error) { return c.status, nil })
	if err != nil {
		respond(w, r, nil, err)
		return
	}
	if status != wire.MasterAlive {
		httpx.WriteErr(w, r, httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoLeader, "master is %s, not ALIVE", status))
		return
	}
	io.WriteString(w, "ALIVE\n")
}

// getCluster answers from the loop when this master leads and has
// confirmed it, else from its replica (marked as a follower's view).
// ?completed=false leaves the finished apps and drivers out, ?workers=false
// the workers' list (their summary stays).
func (m *Master) getCluster(w http.ResponseWriter, r *http.Request) {
	completed, err := parseBoolParam(wire.ClusterCompletedParam, r.URL.Query().Get(wire.ClusterCompletedParam))
	if err != nil {
		httpx.WriteErr(w, r, err)
		return
	}
	workers, err := parseBoolParam(wire.ClusterWorkersParam, r.URL.Query().Get(wire.ClusterWorkersParam))
	if err != nil {
		httpx.WriteErr(w, r, err)
		return
	}
	cs, err := m.clusterView(r.Context(), completed, workers)
	if p := httpx.PrincipalOf(r.Context()); err == nil && p.Kind == httpx.KindTenant {
		ownOnly(cs, p.Name)
	}
	respond(w, r, cs, err)
}

// ownOnly leaves a tenant's view of the cluster its own apps and drivers:
// it sees the workers and the totals, not other tenants' commands,
// environments or logs.
func ownOnly(cs *wire.ClusterStatus, tenant string) {
	others := func(a wire.AppStatus) bool { return a.Tenant != tenant }
	othersDrivers := func(d wire.DriverStatus) bool { return d.Tenant != tenant }
	cs.ActiveApps, cs.CompletedApps = slices.DeleteFunc(cs.ActiveApps, others), slices.DeleteFunc(cs.CompletedApps, others)
	cs.ActiveDrivers, cs.CompletedDrivers = slices.DeleteFunc(cs.ActiveDrivers, othersDrivers), slices.DeleteFunc(cs.CompletedDrivers, othersDrivers)
}

// clusterView is the cluster as this master can tell it: the leader's
// view once it has confirmed its leadership, else its replica's.
func (m *Master) clusterView(ctx context.Context, completed, listWorkers bool) (*wire.ClusterStatus, error) {
	confirmed := m.confirmedLeader(ctx)
	// The loop's answer: the leader's view, or (not leading) its status.
	type view struct {
		leader *wire.ClusterStatus
		status wire.MasterStatus
	}
	v, err := ask(ctx, m, func(c *core, r reply[view]) {
		if confirmed && c.leading() {
			r(view{leader: c.clusterStatus(completed, listWorkers)}, nil)
			return
		}
		status := c.status
		if !confirmed && status != wire.MasterStandby {
			status = wire.MasterStandby // leads by its own account only: not an answer as the leader
		}
		r(view{status: status}, nil)
	})
	if err != nil {
		return nil, err
	}
	if v.leader != nil && (!confirmed || m.lease.fresh()) {
		m.addMasters(ctx, v.leader)
		return v.leader, nil
	} else if v.leader != nil {
		v.status = wire.MasterStandby // the lease lapsed meanwhile (stillLeading): not the leader's view
	}
	leaderID, leader := m.agent.Leader(), m.leaderAddress()
	var cs *wire.ClusterStatus
	if err := m.engine.Read(ctx, func(s *persistence.State) {
		cs = followerStatus(m.cfg.ID, v.status, leaderID, leader, s, completed, listWorkers)
	}); err != nil {
		return nil, fmt.Errorf("reading the replica: %w", err)
	}
	m.addMasters(ctx, cs)
	return cs, nil
}
