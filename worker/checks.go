package worker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// The checks' runs (health.go has their counts). http and tcp checks go
// to the worker's advertised host (the process's BERTH_HOST: a service
// bound to it listens there, and on 127.0.0.1 only if it binds every
// address), or the check's own address, and the port the process was
// given; an exec check runs as
// the process does: its user, its environment, its home, its cgroup (a
// check that eats memory counts against the process's limit, and dies
// with it).

// attemptChecks runs p's checks against its attempt started at started
// until stop. health is told of every result.
type attemptChecks struct {
	w       *Worker
	p       *proc
	health  *attemptHealth
	cg      *cgroup  // the attempt's, nil without
	ident   identity // the attempt's user
	home    string
	cancel  context.CancelFunc
	stopped chan struct{}
}

// startChecks starts p's checks for its current attempt; the returned
// function stops them and waits until none runs.
func (w *Worker) startChecks(p *proc, ident identity, home string) func() {
	if len(p.checks) == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ac := &attemptChecks{w: w, p: p, health: newAttemptHealth(p.checks, time.Now()), cg: p.cg, ident: ident, home: home,
		cancel: cancel, stopped: make(chan struct{})}
	w.setHealth(p, wire.HealthStarting)
	done := make(chan struct{}, len(p.checks))
	for i, c := range p.checks {
		go func() {
			defer func() { done <- struct{}{} }()
			ac.run(ctx, i, c)
		}()
	}
	go func() {
		for range p.checks {
			<-done
		}
		close(ac.stopped)
	}()
	return func() {
		ac.health.stop()
		cancel()
		<-ac.stopped
	}
}

// run runs check i every interval, the first one interval after the start.
func (ac *attemptChecks) run(ctx context.Context, i int, c wire.Check) {
	interval := c.IntervalD()
	next := time.Now()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var web httpProbe // this check's connection, kept from check to check
	defer web.close()
	for {
		next = onTheGrid(next.Add(interval), checkGrid(interval))
		t.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, c.TimeoutD())
		ok, reason := ac.probe(cctx, c, &web)
		cancel()
		if ctx.Err() != nil {
			return // stopped while it ran: its result is not the process's
		}
		ac.w.metrics.checks.WithLabelValues(string(c.Type), result(ok)).Inc()
		changed, unhealthy := ac.health.result(i, ok, reason, time.Now())
		switch {
		case unhealthy != "":
			ac.w.killUnhealthy(ac.p, unhealthy)
			return
		case changed != "":
			ac.w.setHealth(ac.p, changed)
		}
	}
}

// checkGrid is what the checks' times are rounded up to: a tenth of the
// interval, at most 100 ms. The checks due within one step go together,
// one wake-up of the worker for many checks rather than one each (1,000
// checks a second cost 15% of a core when each woke the worker apart, 4%
// on the grid: docs/BENCHMARKS.md). A check comes at most a tenth of its
// interval late.
func checkGrid(interval time.Duration) time.Duration { return min(100*time.Millisecond, interval/10) }

// onTheGrid is t rounded up to the next step of grid.
func onTheGrid(t time.Time, grid time.Duration) time.Time {
	if r := t.Truncate(grid); r.Before(t) {
		return r.Add(grid)
	}
	return t
}

func result(ok bool) string {
	if ok {
		return "pass"
	}
	return "fail"
}

// checkHost is the host an http or tcp check dials.
func (ac *attemptChecks) checkHost(c wire.Check) string {
	if c.Address != "" {
		return c.Address
	}
	return ac.w.host
}

// probe runs c once within ctx: whether it passed, and if not why (with
// at most wire.CheckOutputKept bytes of what it answered).
func (ac *attemptChecks) probe(ctx context.Context, c wire.Check, web *httpProbe) (bool, string) {
	switch c.Type {
	case wire.CheckHTTP:
		return web.probe(ctx, ac.checkHost(c), ac.p.ports[c.Port], c.Path)
	case wire.CheckTCP:
		return probeTCP(ctx, ac.checkHost(c), ac.p.ports[c.Port])
	default:
		return ac.probeExec(ctx, c)
	}
}

// httpProbe is one http check's connection to its process, kept open
// from check to check and used from the check's own goroutine: a new
// connection per check, or net/http's Transport and its goroutines per
// connection, cost several times the CPU (docs/BENCHMARKS.md: 1,000
// checked processes on one worker). A process that hangs still fails: its
// answer does not come within the timeout, on this connection or a new
// one; one that closed the connection gets a new one at once.
type httpProbe struct {
	conn net.Conn
	r    *bufio.Reader
}

func (h *httpProbe) close() {
	if h.conn != nil {
		h.conn.Close()
		h.conn, h.r = nil, nil
	}
}

func (h *httpProbe) probe(ctx context.Context, host string, port int, path string) (bool, string) {
	if path == "" {
		path = "/"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: berth-check\r\n\r\n"
	for attempt := 0; ; attempt++ {
		fresh := h.conn == nil
		if fresh {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return false, timedOut(ctx, err)
			}
			h.conn, h.r = conn, bufio.NewReader(conn)
		}
		if deadline, ok := ctx.Deadline(); ok {
			h.conn.SetDeadline(deadline)
		}
		ok, reason, err := h.exchange(req, path)
		if err == nil {
			return ok, reason
		}
		h.close()
		if fresh || attempt > 0 || ctx.Err() != nil || isTimeout(err) {
			return false, timedOut(ctx, err)
		}
		// The kept connection was closed by the process (an idle timeout,
		// a restart of its server): once more on a new one.
	}
}

// exchange sends req and reads the answer: whether it passed (2xx, 3xx)
// and why not; err when the connection failed.
func (h *httpProbe) exchange(req, path string) (bool, string, error) {
	if _, err := io.WriteString(h.conn, req); err != nil {
		return false, "", err
	}
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		return false, "", err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, wire.CheckOutputKept))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // to its end, for the next answer
	resp.Body.Close()
	if resp.Close {
		h.close()
	}
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		return false, fmt.Sprintf("GET %s answered %d: %q", path, resp.StatusCode, body), nil
	}
	return true, "", nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func probeTCP(ctx context.Context, host string, port int) (bool, string) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false, timedOut(ctx, err)
	}
	conn.Close()
	return true, ""
}

// timedOut words a probe's error, saying so when its timeout ran out.
func timedOut(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || isTimeout(err) {
		return "no answer within its timeout"
	}
	return err.Error()
}

// probeExec runs the check's command as the process runs, in its cgroup;
// on timeout its whole process group is killed.
func (ac *attemptChecks) probeExec(ctx context.Context, c wire.Check) (bool, string) {
	p := ac.p
	cmd := &exec.Cmd{Args: c.Command, Env: p.env, Dir: ac.home, SysProcAttr: ac.w.sysProcAttr(ac.ident)}
	if ac.w.cfg.runAs != nil {
		cmd.Env = setEnv(setEnv(cmd.Env, "HOME", ac.home), "TMPDIR", ac.home)
	}
	program := c.Command[0]
	script := execScript
	var g *gate
	if ac.cg != nil {
		var err error
		if g, err = newGate(cmd); err != nil {
			return false, err.Error()
		}
		script = gatedScript
	}
	cmd.Path = "/bin/sh" // the shell finds the program in the process's PATH, as its user
	cmd.Args = append([]string{"sh", "-c", script, "berth-check", program}, c.Command[1:]...)
	var out bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, left: wire.CheckOutputKept}
	cmd.Stderr = cmd.Stdout
	if err := startProcess(ctx, cmd, ac.w.guard.track); err != nil {
		g.close()
		return false, "could not start: " + err.Error()
	}
	pid := cmd.Process.Pid
	defer ac.w.guard.untrack(pid)
	g.started()
	if g != nil {
		if err := g.open(ac.cg, pid); err != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return false, "could not put it in the process's cgroup: " + err.Error()
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			return false, fmt.Sprintf("%s: %q", describeCheckExit(cmd, err), out.String())
		}
		return true, ""
	case <-ctx.Done():
		_ = syscall.Kill(-pid, syscall.SIGKILL) // its own group (spawn.Attr)
		<-waited
		return false, fmt.Sprintf("no answer within its timeout: %q", out.String())
	}
}

func describeCheckExit(cmd *exec.Cmd, err error) string {
	if cmd.ProcessState != nil {
		return DescribeExitCode(exitCode(cmd.ProcessState))
	}
	return err.Error()
}

// limitedWriter keeps the first left bytes and drops the rest.
type limitedWriter struct {
	w    io.Writer
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.left > 0 {
		n := min(len(p), l.left)
		l.w.Write(p[:n])
		l.left -= n
	}
	return len(p), nil
}

// setHealth records p's health and tells the master.
func (w *Worker) setHealth(p *proc, h wire.Health) {
	w.procs.mu.Lock()
	p.health = h
	ended := p.ended
	w.procs.mu.Unlock()
	if ended || h == wire.HealthUnhealthy {
		return // an unhealthy end is told with the end
	}
	w.procLog(p).Info("health", "health", h)
	if p.kind == kindExecutor {
		w.enqueueExecutor(wire.ExecutorStateChanged{AppID: p.appID, ExecutorID: p.execID, State: wire.ExecutorRunning, Health: h})
	} else {
		w.enqueueDriver(wire.DriverStateChanged{DriverID: p.driverID, State: wire.DriverRunning, Health: h})
	}
}

// killUnhealthy kills p's current attempt at once, with SIGKILL (an
// unhealthy process is not trusted to stop on SIGTERM: a frozen one
// cannot), its whole cgroup after it (wait); the attempt ends FAILED
// saying why.
func (w *Worker) killUnhealthy(p *proc, why string) {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	if p.ended || p.process == nil || p.killReason != "" {
		return
	}
	w.procLog(p).Warn("killing an unhealthy process", "why", why)
	p.unhealthy, p.health = why, wire.HealthUnhealthy
	p.signalLocked(syscall.SIGKILL)
}

// takeUnhealthy is why p's last attempt was killed unhealthy ("" if it
// was not), cleared for the next attempt.
func (w *Worker) takeUnhealthy(p *proc) string {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	why := p.unhealthy
	p.unhealthy = ""
	return why
}

// healthOf is p's health now.
func (w *Worker) healthOf(p *proc) wire.Health {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	return p.health
}
