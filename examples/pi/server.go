package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
)

// The driver's task server, which only the app's executors call:
//
//	POST /lease   leaseRequest → 200 Task | 204 nothing free yet (ask again)
//	                           | 410 the job is over, or this executor was lost
//	POST /result  taskResult   → 204 | 410 the job is over
//
// The job is over once every task has a result AND the driver has
// unregistered the app (released is closed). Until then executors are kept
// polling: one that exited earlier would only be replaced by the master,
// the app still being registered, and killed again a moment later.
//
// Every request carries "Authorization: Bearer <token>", a random token the
// driver hands its executors in the app's environment (tokenEnv): executors
// never see the cluster's secret.
const tokenEnv = "PI_TOKEN"

// longPoll is how long /lease holds a request while every task is leased, so
// that a re-queued task reaches a waiting executor at once.
const longPoll = 2 * time.Second

type leaseRequest struct {
	Executor int `json:"executor"`
}

type taskResult struct {
	Executor int   `json:"executor"`
	ID       int   `json:"id"`
	Inside   int64 `json:"inside"`
}

func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("task server token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// taskHandler serves q to executors that present token.
func taskHandler(q *Queue, token string, released <-chan struct{}, log *slog.Logger) http.Handler {
	over := func() bool {
		select {
		case <-released:
			return true
		default:
			return false
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /lease", func(w http.ResponseWriter, r *http.Request) {
		var req leaseRequest
		if err := httpx.DecodeJSON(w, r, &req); err != nil {
			httpx.WriteErr(w, r, err)
			return
		}
		wait := time.NewTimer(longPoll)
		defer wait.Stop()
		for {
			changed := q.Changed() // before Lease, so no change is missed
			t, err := q.Lease(req.Executor, time.Now())
			switch {
			case err == nil:
				httpx.WriteJSON(w, http.StatusOK, t)
				return
			case errors.Is(err, errExecutorLost), errors.Is(err, errJobDone) && over():
				httpx.WriteError(w, http.StatusGone, "%v", err)
				return
			}
			select {
			case <-changed:
			case <-released:
			case <-wait.C:
				w.WriteHeader(http.StatusNoContent)
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /result", func(w http.ResponseWriter, r *http.Request) {
		var res taskResult
		if err := httpx.DecodeJSON(w, r, &res); err != nil {
			httpx.WriteErr(w, r, err)
			return
		}
		first, err := q.Complete(res.ID, res.Inside)
		if err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "task %d: %v", res.ID, err)
			return
		}
		if first {
			_, _, n := q.Result()
			log.Debug("task done", "task", res.ID, "executor", res.Executor, "done", n)
			if total := q.Len(); n%max(1, total/10) == 0 {
				log.Info("progress", "tasksDone", n, "of", total)
			}
		} else {
			log.Debug("duplicate result ignored", "task", res.ID, "executor", res.Executor)
		}
		if over() {
			httpx.WriteError(w, http.StatusGone, "%v", errJobDone)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return httpx.RequireSecret(token, mux)
}

// startTaskServer serves h on host, on a port the system picks, and returns
// the URL executors call and a function that stops the server.
func startTaskServer(host string, h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", nil, fmt.Errorf("task server: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // lets the long polls answer 410
		_ = srv.Close()
	}
	return "http://" + net.JoinHostPort(host, port), stop, nil
}
