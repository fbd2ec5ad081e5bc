package master

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Logs are proxied from the worker that runs (or ran) the process, so a
// client needs only the master's address and secret.

func (m *Master) driverLogs(w http.ResponseWriter, r *http.Request) {
	id, stream := r.PathValue("id"), r.PathValue("stream")
	if err := errors.Join(checkID("driver id", id), checkStream(stream)); err != nil {
		httpx.WriteErr(w, badRequest("%v", err))
		return
	}
	m.proxyLogs(w, r, func(c *core) (string, error) {
		addr, err := c.driverWorkerAddress(id)
		return addr + wire.WorkerAPI.DriverLogs.Path(id, stream), err
	})
}

func (m *Master) executorLogs(w http.ResponseWriter, r *http.Request) {
	id, stream := r.PathValue("id"), r.PathValue("stream")
	execID, err := checkExecutorID(r.PathValue("executorId"))
	if err = errors.Join(checkID("app id", id), err, checkStream(stream)); err != nil {
		httpx.WriteErr(w, badRequest("%v", err))
		return
	}
	m.proxyLogs(w, r, func(c *core) (string, error) {
		addr, err := c.executorWorkerAddress(id, execID)
		return addr + wire.WorkerAPI.ExecutorLogs.Path(id, strconv.Itoa(execID), stream), err
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
		if err := checkTail(tail); err != nil {
			httpx.WriteErr(w, err)
			return
		}
		url += "?tail=" + tail
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	resp, err := m.cfg.workerClient(0).Open(ctx, http.MethodGet, url, nil)
	if err != nil {
		var se *httpx.StatusError
		if errors.As(err, &se) {
			httpx.WriteErr(w, se)
			return
		}
		httpx.WriteErr(w, httpx.Coded(http.StatusBadGateway, wire.CodeWorkerUnreachable, "worker unreachable: %v", err))
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.Copy(w, resp.Body)
}
