package master

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Handler is the master's HTTP API (see wire/client.go and wire/worker.go).
func (m *Master) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", m.readyz)
	mux.HandleFunc("GET /v1/cluster", m.getCluster)

	mux.HandleFunc("POST /v1/apps", m.postApp)
	mux.HandleFunc("GET /v1/apps/{id}", m.getApp)
	mux.HandleFunc("DELETE /v1/apps/{id}", m.deleteApp)
	mux.HandleFunc("POST /v1/apps/{id}/unregister", m.unregisterApp)
	mux.HandleFunc("POST /v1/apps/{id}/heartbeat", m.appHeartbeat)
	mux.HandleFunc("GET /v1/apps/{id}/events", m.appEvents)
	mux.HandleFunc("PUT /v1/apps/{id}/executor-limit", m.putExecutorLimit)
	mux.HandleFunc("POST /v1/apps/{id}/kill-executors", m.postKillExecutors)
	mux.HandleFunc("GET /v1/apps/{id}/executors/{executorId}/logs/{stream}", m.executorLogs)

	mux.HandleFunc("POST /v1/drivers", m.postDriver)
	mux.HandleFunc("GET /v1/drivers/{id}", m.getDriver)
	mux.HandleFunc("DELETE /v1/drivers/{id}", m.deleteDriver)
	mux.HandleFunc("GET /v1/drivers/{id}/logs/{stream}", m.driverLogs)

	mux.HandleFunc("POST /v1/workers", m.postWorker)
	mux.HandleFunc("POST /v1/workers/{id}/heartbeat", workerPost(m, nil, func(c *core, id string, _ wire.Heartbeat, reply func(any, error)) {
		reply(c.heartbeat(id))
	}))
	mux.HandleFunc("POST /v1/workers/{id}/executor-state", workerPost(m, validateExecutorState, (*core).executorStateChanged))
	mux.HandleFunc("POST /v1/workers/{id}/driver-state", workerPost(m, validateDriverState, (*core).driverStateChanged))
	mux.HandleFunc("POST /v1/workers/{id}/state", workerPost(m, validateLatestState, func(c *core, id string, st wire.WorkerLatestState, reply func(any, error)) {
		reply(c.workerLatestState(id, st))
	}))
	mux.HandleFunc("POST /v1/workers/{id}/decommission", workerPost(m, nil, func(c *core, id string, _ struct{}, reply func(any, error)) {
		reply(struct{}{}, c.decommissionWorker(id))
	}))
	mux.HandleFunc("POST /v1/workers/{id}/leave", workerPost(m, nil, func(c *core, id string, _ struct{}, reply func(any, error)) {
		c.workerLeft(id, reply)
	}))

	mux.HandleFunc("POST /v1/raft/join", m.postJoin)
	mux.HandleFunc("POST /v1/raft/leave", m.postLeave)
	return httpx.RequireSecret(m.cfg.Secret, mux)
}

// respond writes v as JSON, or err with its status. A redirect to the
// leader points at the same path there, so plain HTTP clients (curl -L)
// can follow it.
func respond(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = httpx.Errorf(http.StatusServiceUnavailable, "request abandoned: %v", err)
		}
		var se *httpx.StatusError
		if errors.As(err, &se) && se.Status == http.StatusTemporaryRedirect && se.Leader != "" {
			w.Header().Set("Location", strings.TrimSuffix(se.Leader, "/")+r.URL.RequestURI())
			httpx.WriteJSON(w, se.Status, wire.Error{Error: se.Message, Leader: se.Leader, Code: se.Code})
			return
		}
		httpx.WriteErr(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, v)
}

// decode reads the body into v and checks it; false means the answer was
// already written.
func decode[T any](w http.ResponseWriter, r *http.Request, check func(T) error) (T, bool) {
	var v T
	err := httpx.DecodeJSON(w, r, &v)
	if err == nil && check != nil {
		err = check(v)
	}
	if err != nil {
		httpx.WriteErr(w, err)
		return v, false
	}
	return v, true
}

// idempotencyKey reads the request's wire.IdempotencyKeyHeader ("" if none).
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key, err := checkIdempotencyKey(r.Header.Values(wire.IdempotencyKeyHeader))
	if err != nil {
		httpx.WriteErr(w, err)
		return "", false
	}
	return key, true
}

func pathID(w http.ResponseWriter, r *http.Request, kind string) (string, bool) {
	id := r.PathValue("id")
	if err := checkID(kind, id); err != nil {
		httpx.WriteErr(w, err)
		return "", false
	}
	return id, true
}

func (m *Master) readyz(w http.ResponseWriter, r *http.Request) {
	if m.lease.leading.Load() {
		if err := m.lease.confirm(r.Context()); err != nil {
			httpx.WriteError(w, http.StatusServiceUnavailable, "master could not confirm it leads: %v", err)
			return
		}
	}
	v, err := m.query(r.Context(), func(c *core) (any, error) { return c.status, nil })
	if err != nil {
		respond(w, r, nil, err)
		return
	}
	status := v.(wire.MasterStatus)
	if status != wire.MasterAlive {
		httpx.WriteError(w, http.StatusServiceUnavailable, "master is %s, not ALIVE", status)
		return
	}
	io.WriteString(w, "ALIVE\n")
}

// getCluster answers from the loop when this master leads and has
// confirmed it, else from its replica (marked as a follower's view).
// ?completed=false leaves the finished apps and drivers out.
func (m *Master) getCluster(w http.ResponseWriter, r *http.Request) {
	completed := true
	switch q := r.URL.Query().Get("completed"); q {
	case "", "true":
	case "false":
		completed = false
	default:
		httpx.WriteError(w, http.StatusBadRequest, "completed %q: want true or false", q)
		return
	}
	confirmed := m.confirmedLeader(r.Context())
	v, err := m.ask(r.Context(), func(c *core, reply func(any, error)) {
		if confirmed && c.leading() {
			reply(c.clusterStatus(completed), nil)
			return
		}
		status := c.status
		if !confirmed && status != wire.MasterStandby {
			status = wire.MasterStandby // leads by its own account only: not an answer as the leader
		}
		reply(status, nil)
	})
	if err != nil {
		respond(w, r, nil, err)
		return
	}
	if cs, ok := v.(*wire.ClusterStatus); ok {
		m.addMasters(r.Context(), cs)
		respond(w, r, cs, nil)
		return
	}
	s, err := m.engine.Load(r.Context())
	if err != nil {
		respond(w, r, nil, err)
		return
	}
	cs := followerStatus(m.cfg.ID, v.(wire.MasterStatus), m.agent.Leader(), m.leaderAddress(), s, completed)
	m.addMasters(r.Context(), cs)
	respond(w, r, cs, nil)
}

// addMasters fills in the Raft servers, when there are several masters.
func (m *Master) addMasters(ctx context.Context, cs *wire.ClusterStatus) {
	if m.members == nil {
		return
	}
	servers, err := m.members.Servers(ctx)
	if err != nil {
		return
	}
	api := map[string]string{}
	for _, n := range cs.Masters {
		api[n.ID] = n.APIAddr
	}
	if s, err := m.engine.Load(ctx); err == nil {
		for id, rec := range s.Masters {
			api[id] = rec.APIAddr
		}
	}
	cs.Masters = cs.Masters[:0]
	for _, srv := range servers {
		cs.Masters = append(cs.Masters, wire.MasterNode{ID: srv.ID, RaftAddr: srv.RaftAddr, APIAddr: api[srv.ID], Leader: srv.ID == cs.LeaderID, Voter: srv.Voter})
	}
}

func (m *Master) postApp(w http.ResponseWriter, r *http.Request) {
	submit(m, w, r, validateApp, (*core).registerApp)
}

func (m *Master) postDriver(w http.ResponseWriter, r *http.Request) {
	submit(m, w, r, validateDriver, (*core).submitDriver)
}

// submit serves a submission: its idempotency key and description are
// checked (400), the description hashed off the loop, then the loop
// creates it (or answers a repeat).
func submit[T any](m *Master, w http.ResponseWriter, r *http.Request, validate func(T) error,
	create func(c *core, desc T, idem keyed, reply func(any, error))) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	desc, ok := decode(w, r, validate)
	if !ok {
		return
	}
	idem := keyedRequest(key, desc)
	v, err := m.call(r.Context(), func(c *core, reply func(any, error)) { create(c, desc, idem, reply) })
	respond(w, r, v, err)
}

func (m *Master) getApp(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "app id")
	if !ok {
		return
	}
	v, err := m.query(r.Context(), func(c *core) (any, error) { return c.app(id) })
	respond(w, r, v, err)
}

func (m *Master) deleteApp(w http.ResponseWriter, r *http.Request) {
	m.endApp(w, r, wire.AppKilled, "killed by request")
}

func (m *Master) unregisterApp(w http.ResponseWriter, r *http.Request) {
	m.endApp(w, r, wire.AppFinished, "unregistered by its client")
}

func (m *Master) endApp(w http.ResponseWriter, r *http.Request, state wire.AppState, msg string) {
	id, ok := pathID(w, r, "app id")
	if !ok {
		return
	}
	v, err := m.call(r.Context(), func(c *core, reply func(any, error)) { c.endApp(id, state, msg, reply) })
	respond(w, r, v, err)
}

func (m *Master) appHeartbeat(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "app id")
	if !ok {
		return
	}
	_, err := m.query(r.Context(), func(c *core) (any, error) { return nil, c.appHeartbeat(id) })
	respond(w, r, struct{}{}, err)
}

func (m *Master) putExecutorLimit(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "app id")
	if !ok {
		return
	}
	req, ok := decode(w, r, func(l wire.ExecutorLimit) error { return checkRange("limit", l.Limit, 0, wire.MaxCores*1024) })
	if !ok {
		return
	}
	v, err := m.call(r.Context(), func(c *core, reply func(any, error)) { c.setExecutorLimit(id, req.Limit, reply) })
	respond(w, r, v, err)
}

func (m *Master) postKillExecutors(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "app id")
	if !ok {
		return
	}
	req, ok := decode(w, r, func(k wire.KillExecutors) error {
		for _, e := range k.ExecutorIDs {
			if e < 0 || e >= maxExecutorID {
				return badRequest("executor id %d is out of range", e)
			}
		}
		return nil
	})
	if !ok {
		return
	}
	v, err := m.call(r.Context(), func(c *core, reply func(any, error)) { c.killExecutors(id, req.ExecutorIDs, reply) })
	respond(w, r, v, err)
}

// An idle stream carries a heartbeat line every appEventsKeepAlive, while
// this master's leadership is confirmed (leaderLease). Every line promises
// the next within appEventsDeadline, so a client whose master froze, was cut
// off or was deposed notices within about a second and moves on.
const (
	appEventsKeepAlive = 250 * time.Millisecond
	appEventsDeadline  = time.Second
)

// appEvents streams an app's events as one JSON object per line. The open
// stream is the client's lease on the app.
func (m *Master) appEvents(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "app id")
	if !ok {
		return
	}
	type opened struct {
		sub   *subscriber
		first []wire.AppEvent
	}
	// A stream nobody reads must not hold the app's lease: if the client
	// gave up before the loop got to it, do not subscribe; if it gave up
	// after, unsubscribe what was created (both closures run in the loop,
	// so created needs no lock).
	var created *subscriber
	ctx := r.Context()
	v, err := m.query(ctx, func(c *core) (any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sub, first, err := c.subscribe(id)
		created = sub
		return opened{sub, first}, err
	})
	if err != nil {
		m.post(func(c *core) {
			if created != nil {
				c.unsubscribe(id, created)
			}
		})
		respond(w, r, nil, err)
		return
	}
	o := v.(opened)
	if o.sub != nil {
		defer m.post(func(c *core) { c.unsubscribe(id, o.sub) })
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	write := func(ev wire.AppEvent) bool {
		if ev.AppID == "" {
			ev.AppID = id
		}
		ev.NextWithinMs = appEventsDeadline.Milliseconds()
		if enc.Encode(ev) != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	for _, ev := range o.first {
		if !write(ev) {
			return
		}
	}
	if o.sub == nil {
		return // the app had already ended
	}
	keepAlive := time.NewTicker(appEventsKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, open := <-o.sub.ch:
			if !open || !write(ev) || ev.Type == wire.EventAppRemoved {
				return
			}
		case <-keepAlive.C:
			if !m.lease.fresh() {
				continue // silence: the client moves on if this lasts
			}
			if !write(wire.AppEvent{Type: wire.EventHeartbeat, Time: time.Now()}) {
				return
			}
		}
	}
}

func (m *Master) getDriver(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "driver id")
	if !ok {
		return
	}
	v, err := m.query(r.Context(), func(c *core) (any, error) { return c.driver(id) })
	respond(w, r, v, err)
}

func (m *Master) deleteDriver(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "driver id")
	if !ok {
		return
	}
	v, err := m.call(r.Context(), func(c *core, reply func(any, error)) { c.killDriver(id, reply) })
	respond(w, r, v, err)
}

func (m *Master) postWorker(w http.ResponseWriter, r *http.Request) {
	req, ok := decode(w, r, validateRegistration)
	if !ok {
		return
	}
	v, err := m.call(r.Context(), func(c *core, reply func(any, error)) { c.registerWorker(req, reply) })
	respond(w, r, v, err)
}

// workerPost handles a worker's POST /v1/workers/{id}/...: the worker id
// from the path, a body of type T (checked by check, if not nil), then apply
// in the loop, which replies.
func workerPost[T any](m *Master, check func(T) error, apply func(c *core, id string, msg T, reply func(any, error))) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r, "worker id")
		if !ok {
			return
		}
		msg, ok := decode(w, r, check)
		if !ok {
			return
		}
		v, err := m.call(r.Context(), func(c *core, reply func(any, error)) { apply(c, id, msg, reply) })
		respond(w, r, v, err)
	}
}

// Logs are proxied from the worker that runs (or ran) the process, so a
// client needs only the master's address and secret.

func (m *Master) driverLogs(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "driver id")
	if !ok {
		return
	}
	stream, err := parseStream(r.PathValue("stream"))
	if err != nil {
		httpx.WriteErr(w, err)
		return
	}
	m.proxyLogs(w, r, func(c *core) (string, error) {
		addr, err := c.driverWorkerAddress(id)
		return addr + "/v1/drivers/" + id + "/logs/" + stream, err
	})
}

func (m *Master) executorLogs(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "app id")
	if !ok {
		return
	}
	execID, err := strconv.Atoi(r.PathValue("executorId"))
	if err != nil || execID < 0 {
		httpx.WriteError(w, http.StatusBadRequest, "executor id %q is not a number", r.PathValue("executorId"))
		return
	}
	stream, err := parseStream(r.PathValue("stream"))
	if err != nil {
		httpx.WriteErr(w, err)
		return
	}
	m.proxyLogs(w, r, func(c *core) (string, error) {
		addr, err := c.executorWorkerAddress(id, execID)
		return addr + "/v1/executors/" + id + "/" + strconv.Itoa(execID) + "/logs/" + stream, err
	})
}

func (m *Master) proxyLogs(w http.ResponseWriter, r *http.Request, target func(c *core) (string, error)) {
	v, err := m.query(r.Context(), func(c *core) (any, error) { return target(c) })
	if err != nil {
		respond(w, r, nil, err)
		return
	}
	url := v.(string)
	if tail := r.URL.Query().Get("tail"); tail != "" {
		if n, err := strconv.Atoi(tail); err != nil || n < 0 {
			httpx.WriteError(w, http.StatusBadRequest, "tail %q is not a byte count", tail)
			return
		}
		url += "?tail=" + tail
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	resp, err := httpx.NewClient(m.cfg.Secret, 0).Open(ctx, http.MethodGet, url, nil)
	if err != nil {
		var se *httpx.StatusError
		if errors.As(err, &se) {
			httpx.WriteErr(w, se)
			return
		}
		httpx.WriteError(w, http.StatusBadGateway, "worker unreachable: %v", err)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.Copy(w, resp.Body)
}

func (m *Master) postJoin(w http.ResponseWriter, r *http.Request) {
	req, ok := decode(w, r, func(j wire.JoinRequest) error {
		if err := checkID("master id", j.ID); err != nil {
			return err
		}
		if _, _, err := httpx.SplitHostPort(j.RaftAddr); err != nil {
			return badRequest("raftAddr %q: %v", j.RaftAddr, err)
		}
		if !strings.HasPrefix(j.APIAddr, "http://") && !strings.HasPrefix(j.APIAddr, "https://") {
			return badRequest("apiAddr %q is not an http(s) URL", j.APIAddr)
		}
		return nil
	})
	if !ok {
		return
	}
	m.membershipChange(w, r, func(ctx context.Context) error {
		return m.members.Join(ctx, req.ID, req.RaftAddr)
	}, []func(c *core){func(c *core) { c.recordMaster(req.ID, req.APIAddr) }})
}

func (m *Master) postLeave(w http.ResponseWriter, r *http.Request) {
	req, ok := decode(w, r, func(l wire.LeaveRequest) error { return checkID("master id", l.ID) })
	if !ok {
		return
	}
	m.membershipChange(w, r, func(ctx context.Context) error { return m.members.Leave(ctx, req.ID) },
		[]func(c *core){func(c *core) { c.forgetMaster(req.ID) }})
}

// membershipChange runs a Raft membership change on the leader.
func (m *Master) membershipChange(w http.ResponseWriter, r *http.Request, change func(context.Context) error, after []func(c *core)) {
	if m.members == nil {
		httpx.WriteError(w, http.StatusConflict, "this master runs alone (--recovery-mode is not raft): there is no cluster to join or leave")
		return
	}
	if _, err := m.query(r.Context(), func(c *core) (any, error) {
		if !c.leading() {
			return nil, c.notLeader()
		}
		return nil, nil
	}); err != nil {
		respond(w, r, nil, err)
		return
	}
	if err := change(r.Context()); err != nil {
		httpx.WriteError(w, http.StatusServiceUnavailable, "membership change failed: %v", err)
		return
	}
	for _, fn := range after {
		m.post(fn)
	}
	cs := &wire.ClusterStatus{MasterID: m.cfg.ID, LeaderID: m.cfg.ID}
	m.addMasters(r.Context(), cs)
	respond(w, r, cs.Masters, nil)
}
