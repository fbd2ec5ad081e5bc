package worker

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// The logs are served from the files on disk, so they stay readable after the
// process ended (and after the worker restarted on the same work directory).

func (w *Worker) handleExecutorLog(rw http.ResponseWriter, r *http.Request) {
	appID, execID := r.PathValue("appId"), r.PathValue("executorId")
	if err := checkAppID(appID); err != nil {
		httpx.WriteError(rw, http.StatusBadRequest, "%v", err)
		return
	}
	n, err := strconv.Atoi(execID)
	if err == nil {
		err = checkExecutorID(n)
	}
	if err != nil || strconv.Itoa(n) != execID { // "007" would name another directory
		httpx.WriteError(rw, http.StatusBadRequest, "executorId %q is not a non-negative integer", execID)
		return
	}
	w.serveLog(rw, r, []string{appID, execID}, "executor "+execID+" of app "+appID)
}

func (w *Worker) handleDriverLog(rw http.ResponseWriter, r *http.Request) {
	id := r.PathValue("driverId")
	if err := checkID("driverId", id); err != nil {
		httpx.WriteError(rw, http.StatusBadRequest, "%v", err)
		return
	}
	w.serveLog(rw, r, []string{driversDir, id}, "driver "+id)
}

// serveLog writes the stream named in the path of r from the process's
// directory rel (relDir's names under the work directory), as plain text;
// ?tail=N limits it to its last N bytes. Only files the worker made are
// served (openLogStream): a link planted there is refused, not followed.
func (w *Worker) serveLog(rw http.ResponseWriter, r *http.Request, rel []string, what string) {
	stream := r.PathValue("stream")
	tail, err := wire.ParseLogTail(r.URL.Query().Get(wire.LogTailParam))
	var after *wire.LogCursor
	if s := r.URL.Query().Get(wire.LogAfterParam); s != "" && err == nil {
		var c wire.LogCursor
		c, err = wire.ParseLogCursor(s)
		after = &c
	}
	if err = errors.Join(wire.CheckLogStream(stream), err); err != nil {
		httpx.WriteError(rw, http.StatusBadRequest, "%v", err)
		return
	}
	// Across the rolled files, oldest first (--log-max-size).
	dir, err := w.openProcDirToRead(rel...)
	var body io.Reader
	var end logEnd
	closeAll := func() {}
	if err == nil {
		body, closeAll, end, err = openLogFrom(dir, stream, tail, after)
		dir.Close()
	}
	if errors.Is(err, fs.ErrNotExist) {
		httpx.WriteErr(rw, r, httpx.Coded(http.StatusNotFound, wire.CodeUnknownProcess, "no %s for %s on this worker", stream, what))
		return
	}
	if errors.Is(err, errNotOurs) {
		w.log.Warn("refused to serve a log that is not the worker's file", "of", what, "stream", stream, "err", err)
		httpx.WriteErr(rw, r, httpx.Coded(http.StatusForbidden, wire.CodeForbidden, "the %s of %s is not a file this worker made: refused", stream, what))
		return
	}
	if err != nil {
		httpx.WriteError(rw, http.StatusInternalServerError, "opening the %s of %s: %v", stream, what, err)
		return
	}
	defer closeAll()
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	rw.Header().Set(wire.LogCursorHeader, end.cursor.String())
	if end.gap {
		rw.Header().Set(wire.LogGapHeader, "true")
	}
	rw.WriteHeader(http.StatusOK)
	_, _ = io.Copy(rw, body)
}
