package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// executorConfig is what an executor needs; main fills it from the
// environment the worker gives it.
type executorConfig struct {
	driver   string // the task server's URL
	token    string
	id       int // wire.EnvExecutorID
	cores    int // task loops to run
	giveUp   time.Duration
	http     *http.Client
	onLeased func(Task) // tests: called after each lease
}

// refusedGrace is how long an executor keeps trying a driver that refuses
// connections.
const refusedGrace = 2 * time.Second

// defaultHTTP bounds a request to the driver: a long poll and some slack.
var defaultHTTP = &http.Client{Timeout: longPoll + 10*time.Second}

// errStop ends a task loop normally: the job is done, this executor was
// dropped, or the driver is gone.
var errStop = errors.New("stop")

// runExecutor runs one task loop per core until the driver says the job is
// done, or has been unreachable for giveUp (it died: nothing left to do).
func runExecutor(ctx context.Context, cfg executorConfig, log *slog.Logger) error {
	var wg sync.WaitGroup
	errs := make([]error, cfg.cores)
	for i := range cfg.cores {
		wg.Go(func() { errs[i] = taskLoop(ctx, cfg, log.With("loop", i)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func taskLoop(ctx context.Context, cfg executorConfig, log *slog.Logger) error {
	for {
		var t Task
		status, err := call(ctx, cfg, "/lease", leaseRequest{Executor: cfg.id}, &t)
		switch {
		case errors.Is(err, errStop):
			log.Info("stopping", "reason", err)
			return nil
		case err != nil:
			return err
		case status == http.StatusNoContent:
			continue // every task is leased; ask again
		}
		if cfg.onLeased != nil {
			cfg.onLeased(t)
		}
		res := taskResult{Executor: cfg.id, ID: t.ID, Inside: countInside(t)}
		if _, err := call(ctx, cfg, "/result", res, nil); errors.Is(err, errStop) {
			log.Info("stopping", "reason", err)
			return nil
		} else if err != nil {
			return err
		}
	}
}

// call posts in to the driver and returns the 2xx status, retrying while the
// driver is unreachable for up to giveUp. A 410, or giveUp passing, comes
// back as errStop: the job is over for this executor. Another 4xx is a bug
// (a wrong token) and an error.
func call(ctx context.Context, cfg executorConfig, path string, in, out any) (int, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	var firstFail time.Time
	pause := 50 * time.Millisecond
	for {
		status, err := post(ctx, cfg, path, body, out)
		switch {
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case err == nil && status == http.StatusGone:
			return status, fmt.Errorf("%w: the driver says the job is done (or this executor was lost)", errStop)
		case err == nil && status/100 == 2:
			return status, nil
		case err == nil && status/100 == 4:
			return status, fmt.Errorf("driver answered %d to %s", status, path)
		case err == nil:
			err = fmt.Errorf("driver answered %d", status)
		}
		if firstFail.IsZero() {
			firstFail = time.Now()
		}
		limit := cfg.giveUp
		if errors.Is(err, syscall.ECONNREFUSED) {
			// Nothing listens on the driver's port any more: it exited (a
			// driver never comes back on the same port). Allow a moment
			// only in case of a glitch.
			limit = min(limit, refusedGrace)
		}
		if time.Since(firstFail) > limit {
			return 0, fmt.Errorf("%w: driver unreachable for %s: %v", errStop, limit, err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// post sends one request and decodes a 200 answer into out.
func post(ctx context.Context, cfg executorConfig, path string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.driver+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+cfg.token)
	hc := cfg.http
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return 0, fmt.Errorf("decoding the answer to %s: %w", path, err)
		}
		return resp.StatusCode, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
