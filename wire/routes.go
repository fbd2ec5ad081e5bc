package wire

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
)

// Every route of the master's and the worker's APIs is declared here, once:
// its method, its path pattern and the types of its request and response.
// The servers register their handlers from these declarations and every
// caller builds its requests from them, so a route cannot be renamed on one
// side only, and a handler or a call with the wrong body type does not
// compile.

// Endpoint is a route's method and path pattern; {name} stands for a path
// parameter.
type Endpoint struct {
	Method  string
	Pattern string // e.g. /v1/apps/{id}
	Access  Access // who may call it
}

// Mux is the pattern http.ServeMux registers, e.g. "GET /v1/apps/{id}".
func (e Endpoint) Mux() string { return e.Method + " " + e.Pattern }

// Path fills the pattern's parameters, in order, path-escaped. A missing or
// extra parameter is a bug in the caller, and panics.
func (e Endpoint) Path(params ...string) string {
	var b strings.Builder
	rest := e.Pattern
	for _, p := range params {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest, '}')
		if i < 0 || j < i {
			panic(fmt.Sprintf("wire: %s takes fewer parameters than %d", e.Mux(), len(params)))
		}
		b.WriteString(rest[:i])
		b.WriteString(url.PathEscape(p))
		rest = rest[j+1:]
	}
	if strings.IndexByte(rest, '{') >= 0 {
		panic(fmt.Sprintf("wire: %s takes more parameters than %d", e.Mux(), len(params)))
	}
	b.WriteString(rest)
	return b.String()
}

// Route is an endpoint with its request body type Req and its answer type
// Resp (None: no body).
type Route[Req, Resp any] struct{ Endpoint }

// None is the body of a request or answer that has none.
type None struct{}

// Text is the answer of a route that answers plain text (logs, probes).
type Text struct{}

// Stream is the answer of a route that answers a stream of T, one JSON
// object per line.
type Stream[T any] struct{}

func route[Req, Resp any](method, pattern string, access Access) Route[Req, Resp] {
	return Route[Req, Resp]{Endpoint{method, pattern, access}}
}

// MasterAPI is the master's API: for clients, for workers, and for the
// other masters. See client.go and worker.go for the messages.
var MasterAPI = struct {
	Health, Ready Route[None, Text]
	Cluster       Route[None, ClusterStatus] // ?completed=false leaves the finished out
	Metrics       Route[None, Text]          // Prometheus' text format

	RegisterApp      Route[AppDescription, Submitted] // Idempotency-Key header
	App              Route[None, AppStatus]           // {id}
	KillApp          Route[None, AppStatus]           // {id}; KILLED, or its final status
	UnregisterApp    Route[None, AppStatus]           // {id}; FINISHED
	AppHeartbeat     Route[None, None]                // {id}; the lease without a stream
	AppEvents        Route[None, Stream[AppEvent]]    // {id}; the lease while open
	SetExecutorLimit Route[ExecutorLimit, ExecutorLimit]
	KillExecutors    Route[KillExecutors, KillExecutors]
	ExecutorLogs     Route[None, Text] // {id}/{executorId}/{stream}; ?tail=N

	SubmitDriver Route[DriverDescription, Submitted] // Idempotency-Key header
	Driver       Route[None, DriverStatus]           // {id}
	KillDriver   Route[None, DriverStatus]           // {id}
	DriverLogs   Route[None, Text]                   // {id}/{stream}; ?tail=N

	RegisterWorker      Route[RegisterWorker, RegisteredWorker]
	WorkerHeartbeat     Route[Heartbeat, HeartbeatReply]           // {id}
	ExecutorStateReport Route[ExecutorStateChanged, None]          // {id}
	DriverStateReport   Route[DriverStateChanged, None]            // {id}
	LatestState         Route[WorkerLatestState, LatestStateReply] // {id}
	Decommission        Route[None, None]                          // {id}: place nothing new here
	Drain               Route[DrainRequest, WorkerStatus]          // {id}: drain it, with a deadline
	Undrain             Route[None, WorkerStatus]                  // {id}: end a drain
	ClearWorker         Route[None, WorkerStatus]                  // {id}: forget its failures: no longer unhealthy, no app excluded from it
	WorkerLeft          Route[None, None]                          // {id}: gone, remove it now

	JoinMaster  Route[JoinRequest, []MasterNode]
	LeaveMaster Route[LeaveRequest, []MasterNode]
	RaftStatus  Route[None, RaftFigures] // this master's own Raft figures

	// An operator's snapshots and Raft membership (berth operator).
	SnapshotSave    Route[None, SnapshotFile]      // the leader's state, as a snapshot file
	SnapshotRestore Route[RestoreRequest, Restore] // replace the state with a snapshot's
	RaftPeers       Route[None, RaftPeers]         // the Raft configuration, each master asked
	RemoveRaftPeer  Route[None, RaftPeers]         // {id}: a master other than the leader

	// EndUISession is open: the session's own value in the body proves the
	// right to end it (a stolen copy can end it, nothing more).
	EndUISession Route[EndSession, None]
	// SignInLink makes a one-time link that signs a browser in to the web
	// UI of the master that answers (berth ui).
	SignInLink Route[None, SignInLink]

	Queues       Route[None, Queues]
	PutQueue     Route[QueueSpec, QueueStatus] // {id}: the queue's name
	DeleteQueue  Route[None, None]             // {id}
	Tenants      Route[None, Tenants]
	CreateTenant Route[TenantSpec, TenantCreated] // {id}: the tenant's name
	DeleteTenant Route[None, None]                // {id}
	AuditLog     Route[None, Audit]               // ?since=1h&tenant=NAME

	UI
}{
	Health:  route[None, Text]("GET", "/healthz", AccessOpen),
	Ready:   route[None, Text]("GET", "/readyz", AccessOperator),
	Cluster: route[None, ClusterStatus]("GET", "/v1/cluster", AccessTenant),
	Metrics: route[None, Text]("GET", "/metrics", AccessOperator),

	RegisterApp:      route[AppDescription, Submitted]("POST", "/v1/apps", AccessApp),
	App:              route[None, AppStatus]("GET", "/v1/apps/{id}", AccessApp),
	KillApp:          route[None, AppStatus]("DELETE", "/v1/apps/{id}", AccessApp),
	UnregisterApp:    route[None, AppStatus]("POST", "/v1/apps/{id}/unregister", AccessApp),
	AppHeartbeat:     route[None, None]("POST", "/v1/apps/{id}/heartbeat", AccessApp),
	AppEvents:        route[None, Stream[AppEvent]]("GET", "/v1/apps/{id}/events", AccessApp),
	SetExecutorLimit: route[ExecutorLimit, ExecutorLimit]("PUT", "/v1/apps/{id}/executor-limit", AccessApp),
	KillExecutors:    route[KillExecutors, KillExecutors]("POST", "/v1/apps/{id}/kill-executors", AccessApp),
	ExecutorLogs:     route[None, Text]("GET", "/v1/apps/{id}/executors/{executorId}/logs/{stream}", AccessApp),

	SubmitDriver: route[DriverDescription, Submitted]("POST", "/v1/drivers", AccessTenant),
	Driver:       route[None, DriverStatus]("GET", "/v1/drivers/{id}", AccessTenant),
	KillDriver:   route[None, DriverStatus]("DELETE", "/v1/drivers/{id}", AccessTenant),
	DriverLogs:   route[None, Text]("GET", "/v1/drivers/{id}/logs/{stream}", AccessTenant),

	RegisterWorker:      route[RegisterWorker, RegisteredWorker]("POST", "/v1/workers", AccessWorker),
	WorkerHeartbeat:     route[Heartbeat, HeartbeatReply]("POST", "/v1/workers/{id}/heartbeat", AccessWorker),
	ExecutorStateReport: route[ExecutorStateChanged, None]("POST", "/v1/workers/{id}/executor-state", AccessWorker),
	DriverStateReport:   route[DriverStateChanged, None]("POST", "/v1/workers/{id}/driver-state", AccessWorker),
	LatestState:         route[WorkerLatestState, LatestStateReply]("POST", "/v1/workers/{id}/state", AccessWorker),
	Decommission:        route[None, None]("POST", "/v1/workers/{id}/decommission", AccessOperator),
	Drain:               route[DrainRequest, WorkerStatus]("POST", "/v1/workers/{id}/drain", AccessWorker), // a worker drains itself on SIGTERM
	Undrain:             route[None, WorkerStatus]("POST", "/v1/workers/{id}/undrain", AccessOperator),
	ClearWorker:         route[None, WorkerStatus]("POST", "/v1/workers/{id}/clear", AccessOperator),
	WorkerLeft:          route[None, None]("POST", "/v1/workers/{id}/leave", AccessWorker),

	JoinMaster:  route[JoinRequest, []MasterNode]("POST", "/v1/raft/join", AccessMaster),
	LeaveMaster: route[LeaveRequest, []MasterNode]("POST", "/v1/raft/leave", AccessMaster),
	RaftStatus:  route[None, RaftFigures]("GET", "/v1/raft/status", AccessMaster),

	SnapshotSave:    route[None, SnapshotFile]("GET", "/v1/operator/snapshot", AccessOperator),
	SnapshotRestore: route[RestoreRequest, Restore]("POST", "/v1/operator/snapshot/restore", AccessOperator),
	RaftPeers:       route[None, RaftPeers]("GET", "/v1/operator/raft/peers", AccessOperator),
	RemoveRaftPeer:  route[None, RaftPeers]("DELETE", "/v1/operator/raft/peers/{id}", AccessOperator),

	EndUISession: route[EndSession, None]("POST", "/v1/ui/sessions/end", AccessOpen),
	SignInLink:   route[None, SignInLink]("POST", "/v1/ui/sign-in-links", AccessOperator),

	Queues:       route[None, Queues]("GET", "/v1/queues", AccessTenant),
	PutQueue:     route[QueueSpec, QueueStatus]("PUT", "/v1/queues/{id}", AccessOperator),
	DeleteQueue:  route[None, None]("DELETE", "/v1/queues/{id}", AccessOperator),
	Tenants:      route[None, Tenants]("GET", "/v1/tenants", AccessOperator),
	CreateTenant: route[TenantSpec, TenantCreated]("POST", "/v1/tenants/{id}", AccessOperator),
	DeleteTenant: route[None, None]("DELETE", "/v1/tenants/{id}", AccessOperator),
	AuditLog:     route[None, Audit]("GET", "/v1/audit", AccessOperator),

	UI: uiRoutes,
}

// WorkerAPI is the worker's API: the master's commands (each carries the
// master's epoch; a worker refuses one older than the newest it has seen
// with 409 stale_epoch), and reads for people and the master's log proxy.
var WorkerAPI = struct {
	Health  Route[None, Text]
	State   Route[None, WorkerLatestState]
	Metrics Route[None, Text] // Prometheus' text format

	LaunchExecutor Route[LaunchExecutor, None]
	KillExecutor   Route[KillExecutor, None]
	LaunchDriver   Route[LaunchDriver, None]
	KillDriver     Route[KillDriver, None]
	AppFinished    Route[ApplicationFinished, None]
	Reconnect      Route[Reconnect, None]

	ExecutorLogs Route[None, Text] // {appId}/{executorId}/{stream}; ?tail=N
	DriverLogs   Route[None, Text] // {driverId}/{stream}; ?tail=N

	UI
}{
	Health:  route[None, Text]("GET", "/healthz", AccessOpen),
	State:   route[None, WorkerLatestState]("GET", "/v1/state", AccessMaster),
	Metrics: route[None, Text]("GET", "/metrics", AccessOperator),

	LaunchExecutor: route[LaunchExecutor, None]("POST", "/v1/executors", AccessMaster),
	KillExecutor:   route[KillExecutor, None]("POST", "/v1/executors/kill", AccessMaster),
	LaunchDriver:   route[LaunchDriver, None]("POST", "/v1/drivers", AccessMaster),
	KillDriver:     route[KillDriver, None]("POST", "/v1/drivers/kill", AccessMaster),
	AppFinished:    route[ApplicationFinished, None]("POST", "/v1/apps/finished", AccessMaster),
	Reconnect:      route[Reconnect, None]("POST", "/v1/reconnect", AccessMaster),

	ExecutorLogs: route[None, Text]("GET", "/v1/executors/{appId}/{executorId}/logs/{stream}", AccessMaster),
	DriverLogs:   route[None, Text]("GET", "/v1/drivers/{driverId}/logs/{stream}", AccessMaster),

	UI: uiRoutes,
}

// UI is the web UI's part of an API (package ui), on master and worker:
// "/" goes to its pages; the pages and their forms are an operator's,
// behind the sign-in (a session cookie, a cli certificate, or the loopback
// mode), which is open, as are the styles and script. A tenant's session
// opens the pages of its own apps and drivers and their logs (the links
// Spark's UI gives its users), and signs out; every other page and every
// form stays an operator's: a page added under /ui/ is an operator's
// unless it is declared here for tenants too.
type UI struct {
	UIRoot       Route[None, Text] // redirects to the pages
	UIPages      Route[None, Text] // GET /ui/...: HTML
	UIActions    Route[None, Text] // POST /ui/...: forms, with the UI's CSRF token
	UISignIn     Route[None, Text]
	UISignInForm Route[None, Text]
	UIStatic     Route[None, Text]
	UIApp        Route[None, Text] // {id}: an app's page (a tenant's: read-only)
	UIDriver     Route[None, Text] // {id}: a driver's page (a tenant's: read-only)
	UILogs       Route[None, Text] // ?app=&executor=&stream=, or ?driver=&stream=
	UISignOut    Route[None, Text] // a form, with the UI's CSRF token
}

var uiRoutes = UI{
	UIRoot:       route[None, Text]("GET", "/{$}", AccessOpen),
	UIPages:      route[None, Text]("GET", "/ui/", AccessOperator),
	UIActions:    route[None, Text]("POST", "/ui/", AccessOperator),
	UISignIn:     route[None, Text]("GET", "/ui/sign-in", AccessOpen),
	UISignInForm: route[None, Text]("POST", "/ui/sign-in", AccessOpen),
	UIStatic:     route[None, Text]("GET", "/ui/static/", AccessOpen),
	UIApp:        route[None, Text]("GET", "/ui/apps/{id}", AccessTenantUI),
	UIDriver:     route[None, Text]("GET", "/ui/drivers/{id}", AccessTenantUI),
	UILogs:       route[None, Text]("GET", "/ui/logs", AccessTenantUI),
	UISignOut:    route[None, Text]("POST", "/ui/sign-out", AccessTenantUI),
}

// Endpoints lists the endpoints of an API table (MasterAPI or WorkerAPI), in
// declaration order, for documentation and its test.
func Endpoints(api any) []Endpoint {
	v := reflect.ValueOf(api)
	var out []Endpoint
	for i := range v.NumField() {
		f := v.Field(i)
		if ui, ok := f.Interface().(UI); ok {
			out = append(out, Endpoints(ui)...)
			continue
		}
		if e, ok := f.FieldByName("Endpoint").Interface().(Endpoint); ok {
			out = append(out, e)
		}
	}
	return out
}
