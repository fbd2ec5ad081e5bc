package master

import (
	"context"
	"errors"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/ui"
	"github.com/berth-cluster/berth/wire"
)

// Logs are proxied from the worker that runs (or ran) the process, so a
// client needs only the master's address and secret.

func (m *Master) driverLogs(w http.ResponseWriter, r *http.Request) {
	id, stream := r.PathValue("id"), r.PathValue("stream")
	if err := errors.Join(checkID("driver id", id), checkStream(stream)); err != nil {
		httpx.WriteErr(w, r, badRequest("%v", err))
		return
	}
	m.proxyLogs(w, r, func(c *core) (string, error) {
		return logURL(ui.LogTarget{DriverID: id, Stream: stream}, c.driverWorkerAddress, c.executorWorkerAddress)
	})
}

func (m *Master) executorLogs(w http.ResponseWriter, r *http.Request) {
	id, stream := r.PathValue("id"), r.PathValue("stream")
	execID, err := checkExecutorID(r.PathValue("executorId"))
	if err = errors.Join(checkID("app id", id), err, checkStream(stream)); err != nil {
		httpx.WriteErr(w, r, badRequest("%v", err))
		return
	}
	m.proxyLogs(w, r, func(c *core) (string, error) {
		return logURL(ui.LogTarget{AppID: id, Executor: execID, Stream: stream}, c.driverWorkerAddress, c.executorWorkerAddress)
	})
}

func (m *Master) proxyLogs(w http.ResponseWriter, r *http.Request, target func(c *core) (string, error)) {
	tail, err := wire.ParseLogTail(r.URL.Query().Get(wire.LogTailParam))
	after := r.URL.Query().Get(wire.LogAfterParam)
	if err == nil && after != "" {
		_, err = wire.ParseLogCursor(after)
	}
	if err != nil {
		httpx.WriteErr(w, r, badRequest("%v", err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	resp, err := m.openLogAfter(ctx, target, tail, after)
	if err != nil {
		var se *httpx.StatusError
		if errors.As(err, &se) {
			respond(w, r, nil, se) // the lookup's (a 404, a redirect) or the worker's
			return
		}
		httpx.WriteErr(w, r, httpx.Coded(http.StatusBadGateway, wire.CodeWorkerUnreachable, "worker unreachable: %v", err))
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, h := range []string{wire.LogCursorHeader, wire.LogGapHeader} { // for berth logs --follow
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	io.Copy(w, resp.Body)
}

// openLogAfter asks the worker that runs (or ran) target's process for its
// log (the last tail bytes, all if negative; from a cursor, after: see
// wire.LogAfterParam, "" for none). A lookup error is the loop's (404, a
// redirect); a transport error is left to the caller.
func (m *Master) openLogAfter(ctx context.Context, target func(c *core) (string, error), tail int64, after string) (*http.Response, error) {
	url, err := query(ctx, m, target)
	if err != nil {
		return nil, err
	}
	return m.openWorkerLog(ctx, url, tail, after)
}

// openWorkerLog opens url, a worker's log route, with tail and after.
func (m *Master) openWorkerLog(ctx context.Context, url string, tail int64, after string) (*http.Response, error) {
	q := neturl.Values{}
	if tail >= 0 {
		q.Set(wire.LogTailParam, strconv.FormatInt(tail, 10))
	}
	if after != "" {
		q.Set(wire.LogAfterParam, after)
	}
	if len(q) > 0 {
		url += "?" + q.Encode()
	}
	return m.cfg.workerClient(0).Open(ctx, http.MethodGet, url, nil)
}
