package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// pageSize bounds every table: 10,000 workers or 1,000 apps must still make
// a page that renders fast (the rest is a click away).
const pageSize = 100

// pageOf is one page of a list: its items and the links around them.
type pageOf[T any] struct {
	Items       []T
	Page, Pages int
	Total       int
	Param       string // the query parameter of the page number
}

func paginate[T any](all []T, r *http.Request, param string) pageOf[T] {
	pages := max((len(all)+pageSize-1)/pageSize, 1)
	n, _ := strconv.Atoi(r.URL.Query().Get(param))
	n = min(max(n, 1), pages)
	lo := (n - 1) * pageSize
	return pageOf[T]{Items: all[lo:min(lo+pageSize, len(all))], Page: n, Pages: pages, Total: len(all), Param: param}
}

// overviewData is the master's overview: Spark's master page and more.
type overviewData struct {
	C        *wire.ClusterStatus
	Raft     map[string]string
	Sum      summary
	Workers  pageOf[wire.WorkerStatus]
	Apps     pageOf[wire.AppStatus]
	Drivers  pageOf[wire.DriverStatus]
	DoneApps pageOf[wire.AppStatus]
	DoneDrvs pageOf[wire.DriverStatus]
	Now      time.Time
}

// summary counts what the overview's header shows.
type summary struct {
	Alive, Decommissioning, Dead, Decommissioned, Other int
	Cores, CoresUsed, Memory, MemoryUsed                int
	Executors                                           map[wire.ExecutorState]int
	// Resources: the custom resources of the workers counted as their
	// cores are (DEAD ones left out), wholly free on ALIVE ones.
	Resources []wire.ResourceTotal
	// Unhealthy: workers nothing new is placed on, for the failures of
	// several apps there (docs/HEALTH.md), whatever their state.
	Unhealthy int
}

func summarize(c *wire.ClusterStatus) summary {
	s := summary{Executors: map[wire.ExecutorState]int{}}
	for _, w := range c.Workers {
		switch w.State {
		case wire.WorkerAlive:
			s.Alive++
		case wire.WorkerDecommissioning: // draining
			s.Decommissioning++
		case wire.WorkerDead:
			s.Dead++
		case wire.WorkerDecommissioned:
			s.Decommissioned++
		default:
			s.Other++
		}
		if w.Unhealthy != "" {
			s.Unhealthy++
		}
		if w.State != wire.WorkerDead {
			s.Cores, s.CoresUsed, s.Memory, s.MemoryUsed = s.Cores+w.Cores, s.CoresUsed+w.CoresUsed, s.Memory+w.MemoryMB, s.MemoryUsed+w.MemoryUsedMB
			s.Resources = wire.AddResourceUses(s.Resources, w.State, w.Resources)
		}
	}
	for _, a := range c.ActiveApps {
		for _, e := range a.Executors {
			s.Executors[e.State]++
		}
	}
	return s
}

func (u *server) overview(w http.ResponseWriter, r *http.Request) {
	c, ok := u.cluster(w, r)
	if !ok {
		return
	}
	u.render(w, r, http.StatusOK, "overview", roleOf(c), overviewData{
		C: c, Raft: u.o.Source.Raft(), Sum: summarize(c), Now: time.Now(),
		Workers: paginate(c.Workers, r, "workers"), Apps: paginate(c.ActiveApps, r, "apps"),
		Drivers: paginate(c.ActiveDrivers, r, "drivers"), DoneApps: paginate(c.CompletedApps, r, "done-apps"),
		DoneDrvs: paginate(c.CompletedDrivers, r, "done-drivers"),
	})
}

// cluster reads the cluster for a page; on failure it renders the error
// page and returns false.
func (u *server) cluster(w http.ResponseWriter, r *http.Request) (*wire.ClusterStatus, bool) {
	ctx, cancel := pageCtx(r)
	defer cancel()
	c, err := u.o.Source.Cluster(ctx)
	if err != nil {
		u.fail(w, r, role{}, err)
		return nil, false
	}
	return c, true
}

// workerData is one worker and what runs on it.
type workerData struct {
	W         wire.WorkerStatus
	Executors []placed
	Drivers   []wire.DriverStatus
	// KeptOff: the active apps whose executors are kept off it.
	KeptOff []exclusionOf
}

// exclusionOf is an app kept off a worker.
type exclusionOf struct {
	App, Name string
	X         wire.Exclusion
}

// keptOff is the exclusions of c's active apps from worker id.
func keptOff(c *wire.ClusterStatus, id string) []exclusionOf {
	var out []exclusionOf
	for _, a := range c.ActiveApps {
		for _, x := range a.Excluded {
			if x.WorkerID == id {
				out = append(out, exclusionOf{a.ID, a.Name, x})
			}
		}
	}
	return out
}

// placed is an executor with its app.
type placed struct {
	App string
	E   wire.ExecutorStatus
}

func (u *server) worker(w http.ResponseWriter, r *http.Request) {
	c, ok := u.cluster(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	i := slices.IndexFunc(c.Workers, func(x wire.WorkerStatus) bool { return x.ID == id })
	if i < 0 {
		u.fail(w, r, roleOf(c), unknown(wire.CodeUnknownWorker, "worker", id))
		return
	}
	d := workerData{W: c.Workers[i], KeptOff: keptOff(c, id)}
	for _, a := range c.ActiveApps {
		for _, e := range a.Executors {
			if e.WorkerID == id && !e.State.Finished() {
				d.Executors = append(d.Executors, placed{a.ID, e})
			}
		}
	}
	for _, dr := range c.ActiveDrivers {
		if dr.WorkerID == id {
			d.Drivers = append(d.Drivers, dr)
		}
	}
	u.render(w, r, http.StatusOK, "worker", roleOf(c), d)
}

// appData is one app, its executors and its recent events.
type appData struct {
	A      *wire.AppStatus
	Events []wire.AppEvent
	Shape  appShape
	// Checked: its executors have ports or checks (their columns show).
	Checked bool
}

// checked reports whether a's executors have ports or checks.
func checked(a *wire.AppStatus) bool {
	return len(a.Ports) > 0 || len(a.Checks) > 0 || slices.ContainsFunc(a.Executors, func(e wire.ExecutorStatus) bool { return len(e.Ports) > 0 || e.Health != "" })
}

// app is an app's page: the leader's view, with its events; a follower
// shows the app's record from its replica (no executors, no events). A
// tenant sees its own apps' pages, read-only, and is answered alike for
// another's app and for none.
func (u *server) app(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageCtx(r)
	defer cancel()
	id := r.PathValue("id")
	c, cerr := u.o.Source.Cluster(ctx)
	d := appData{}
	var err error
	if cerr == nil && c.View == wire.ViewFollower {
		if d.A = listed(id, c.ActiveApps, c.CompletedApps, func(a wire.AppStatus) string { return a.ID }); d.A == nil {
			err = unknown(wire.CodeUnknownApp, "application", id)
		}
	} else {
		d.A, d.Events, err = u.o.Source.App(ctx, id)
	}
	if tenant := tenantOf(r); tenant != "" && (notFound(err) || err == nil && d.A.Tenant != tenant) {
		u.refuseNotTheTenants(w, r, entityApp, id)
		return
	}
	if err != nil {
		u.fail(w, r, roleOf(c), err)
		return
	}
	var workers []wire.WorkerStatus
	if cerr == nil {
		workers = c.Workers
	}
	d.Shape = shapeOf(*d.A, capacities(workers))
	d.Checked = checked(d.A)
	u.render(w, r, http.StatusOK, "app", roleOf(c), d)
}

// listed is the entity of lists with the id, nil if none.
func listed[T any](id string, active, completed []T, idOf func(T) string) *T {
	for _, list := range [][]T{active, completed} {
		if i := slices.IndexFunc(list, func(x T) bool { return idOf(x) == id }); i >= 0 {
			return &list[i]
		}
	}
	return nil
}

// driverData is one driver and its history across relaunches.
type driverData struct {
	D       *wire.DriverStatus
	History []wire.DriverStatus // oldest first, this one included
}

// driver is a driver's page, the leader's view or, on a follower, the
// driver's record from its replica; a tenant's own only, as app.
func (u *server) driver(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageCtx(r)
	defer cancel()
	id := r.PathValue("id")
	c, cerr := u.o.Source.Cluster(ctx)
	var d *wire.DriverStatus
	var err error
	if cerr == nil && c.View == wire.ViewFollower {
		if d = listed(id, c.ActiveDrivers, c.CompletedDrivers, func(d wire.DriverStatus) string { return d.ID }); d == nil {
			err = unknown(wire.CodeUnknownDriver, "driver", id)
		}
	} else {
		d, err = u.o.Source.Driver(ctx, id)
	}
	tenant := tenantOf(r)
	if tenant != "" && (notFound(err) || err == nil && d.Tenant != tenant) {
		u.refuseNotTheTenants(w, r, entityDriver, id)
		return
	}
	if err != nil {
		u.fail(w, r, roleOf(c), err)
		return
	}
	data := driverData{D: d, History: []wire.DriverStatus{*d}}
	if cerr == nil {
		data.History = history(*d, append(slices.Clone(c.ActiveDrivers), c.CompletedDrivers...))
	}
	if tenant != "" { // a relaunch is its tenant's too; others' never show
		data.History = slices.DeleteFunc(data.History, func(x wire.DriverStatus) bool { return x.Tenant != tenant })
	}
	u.render(w, r, http.StatusOK, "driver", roleOf(c), data)
}

// history is d's chain of relaunches, oldest first, as far as the listed
// drivers go.
func history(d wire.DriverStatus, all []wire.DriverStatus) []wire.DriverStatus {
	byID := map[string]wire.DriverStatus{}
	for _, x := range all {
		byID[x.ID] = x
	}
	byID[d.ID] = d
	chain := []wire.DriverStatus{d}
	for cur := d; cur.RelaunchOf != "" && len(chain) < 1000; {
		prev, ok := byID[cur.RelaunchOf]
		if !ok {
			break
		}
		chain, cur = append([]wire.DriverStatus{prev}, chain...), prev
	}
	for cur := d; cur.RelaunchedAs != "" && len(chain) < 1000; {
		next, ok := byID[cur.RelaunchedAs]
		if !ok {
			break
		}
		chain, cur = append(chain, next), next
	}
	return chain
}

// logData is a log page: the tail of a process's stream, followed live.
type logData struct {
	T     LogTarget
	Text  string
	Raw   string // the URL of the raw tail, for the page's script
	Error string
}

const logTail = 64 << 10

func (u *server) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	t := LogTarget{AppID: q.Get("app"), DriverID: q.Get("driver"), Stream: q.Get("stream")}
	exec, err := strconv.Atoi(q.Get("executor"))
	t.Executor = exec
	if (t.AppID == "") == (t.DriverID == "") || (t.AppID != "" && err != nil) || wire.CheckLogStream(t.Stream) != nil {
		http.Error(w, "want app and executor, or driver, and stream stdout or stderr", http.StatusBadRequest)
		return
	}
	ctx, cancel := pageCtx(r)
	defer cancel()
	if tenant := tenantOf(r); tenant != "" {
		on, id := entityApp, t.AppID
		if t.DriverID != "" {
			on, id = entityDriver, t.DriverID
		}
		ok, err := u.owned(ctx, tenant, on, id)
		switch {
		case err != nil && q.Get("raw") == "1":
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		case err != nil:
			u.fail(w, r, role{}, err)
			return
		case !ok && q.Get("raw") == "1":
			http.Error(w, notTheTenants(tenant, on, id), http.StatusForbidden)
			return
		case !ok:
			u.refuseNotTheTenants(w, r, on, id)
			return
		}
	}
	text, err := u.o.Source.Log(ctx, t, logTail)
	if q.Get("raw") == "1" {
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(text))
		return
	}
	raw := url.Values{"raw": {"1"}, "stream": {t.Stream}}
	if t.AppID != "" {
		raw.Set("app", t.AppID)
		raw.Set("executor", strconv.Itoa(t.Executor))
	} else {
		raw.Set("driver", t.DriverID)
	}
	d := logData{T: t, Text: text, Raw: "/ui/logs?" + raw.Encode()}
	if err != nil {
		d.Error = err.Error()
	}
	u.render(w, r, http.StatusOK, "logs", roleOfErr(err), d)
}
