package ui

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/berth-cluster/berth/internal/httpx"
)

// WorkerView is what a worker's page shows: the worker and what it runs.
type WorkerView struct {
	ID, Address     string
	Cores, MemoryMB int
	// Resources is the custom resources it offers: name → addresses.
	Resources map[string][]string
	// Limits says how it enforces its processes' limits ("cgroup v2"), or
	// that it does not and why.
	Limits  string
	Masters []string
	Leader  string // the leader's API address, as the worker knows it
	Procs   []Proc
}

// Proc is one process a worker runs.
type Proc struct {
	Kind            string // executor or driver
	ID              string // app/executor, or the driver's id
	Cores, MemoryMB int
	Resources       string // what it was given: "gpu=1(0.5)"
	State           string
	PID             int
}

// WorkerOptions configure a worker's UI.
type WorkerOptions struct {
	View         func(ctx context.Context) WorkerView
	Secret       string
	Sessions     *httpx.UISessions
	Secure       bool
	SignInNeeded bool
	Log          *slog.Logger
}

// WorkerHandler serves a worker's page (see Mount): its processes, and a
// link to the master's UI, which shows the cluster. A worker has no
// tenants: its sessions take none (no UISessions.TenantToken) and its
// sign-in takes the operator secret only.
func WorkerHandler(o WorkerOptions) http.Handler {
	u := &server{o: Options{Secret: o.Secret, Sessions: o.Sessions, Secure: o.Secure, SignInNeeded: o.SignInNeeded, Log: o.Log}, pages: parse(), csrf: newCSRF()}
	mux := u.common()
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := pageCtx(r)
		defer cancel()
		u.render(w, r, http.StatusOK, "workerui", role{}, o.View(ctx))
	})
	return refuser{securityHeaders(mux), u}
}
