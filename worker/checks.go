package worker

import (
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
// to 127.0.0.1 and the port the process was given; an exec check runs as
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
	t := time.NewTicker(c.IntervalD())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, c.TimeoutD())
		ok, reason := ac.probe(cctx, c)
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

func result(ok bool) string {
	if ok {
		return "pass"
	}
	return "fail"
}

// probe runs c once within ctx: whether it passed, and if not why (with
// at most wire.CheckOutputKept bytes of what it answered).
func (ac *attemptChecks) probe(ctx context.Context, c wire.Check) (bool, string) {
	switch c.Type {
	case wire.CheckHTTP:
		return probeHTTP(ctx, ac.p.ports[c.Port], c.Path)
	case wire.CheckTCP:
		return probeTCP(ctx, ac.p.ports[c.Port])
	default:
		return ac.probeExec(ctx, c)
	}
}

func probeHTTP(ctx context.Context, port int, path string) (bool, string) {
	if path == "" {
		path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+path, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := checkClient.Do(req)
	if err != nil {
		return false, timedOut(ctx, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, wire.CheckOutputKept))
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		return false, fmt.Sprintf("GET %s answered %d: %q", path, resp.StatusCode, body)
	}
	return true, ""
}

// checkClient follows no redirect (a 3xx passes) and keeps no connection
// (each check is a new look).
var checkClient = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func probeTCP(ctx context.Context, port int) (bool, string) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false, timedOut(ctx, err)
	}
	conn.Close()
	return true, ""
}

// timedOut words a probe's error, saying so when its timeout ran out.
func timedOut(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
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
