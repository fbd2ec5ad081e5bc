package sparkcmp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// appSpec is one Spark application of a measure, the same on both systems.
type appSpec struct {
	name      string
	executors int      // the driver waits for this many executors ...
	cores     int      // ... with this many cores in all
	conf      []string // its own --conf k=v
	tasks     int      // its one job's tasks (0: no job)
	taskMs    int      // how long each task sleeps
	hold      time.Duration
	wait      time.Duration // the driver's own bound on waiting for its executors
}

// driverArgs are BerthBenchDriver's arguments for the spec.
func (s appSpec) driverArgs() []string {
	return []string{"--executors", strconv.Itoa(s.executors), "--cores", strconv.Itoa(s.cores),
		"--tasks", strconv.Itoa(s.tasks), "--task-ms", strconv.Itoa(s.taskMs),
		"--wait-s", strconv.Itoa(int(s.wait.Seconds())), "--hold-s", strconv.Itoa(int(s.hold.Seconds()))}
}

// event is one BERTHBENCH line of the driver: what happened and when, by
// the driver's clock (this machine's).
type event struct {
	kind   string // main, context, added, removed, ready, timeout, job-start, job-end, job-failed, holding, released, stopped
	at     time.Time
	fields []string
}

const eventPrefix = "BERTHBENCH "

// parseEvent reads one line of the driver's stdout; false for any other
// line.
func parseEvent(line string) (event, bool) {
	rest, ok := strings.CutPrefix(line, eventPrefix)
	if !ok {
		return event{}, false
	}
	f := strings.Fields(rest)
	if len(f) < 2 {
		return event{}, false
	}
	ms, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return event{}, false
	}
	return event{kind: f[0], at: time.UnixMilli(ms), fields: f[2:]}, true
}

// app is one spark-submit, its driver's events read as they come.
type app struct {
	system string
	spec   appSpec
	start  time.Time // just before the spark-submit process started
	log    string    // its stderr (Spark's log) and stdout
	cmd    *exec.Cmd
	stdin  io.WriteCloser

	mu      sync.Mutex
	events  []event
	changed chan struct{} // closed, and replaced, at each event and at the exit

	done    chan struct{}
	exitErr error
	exitAt  time.Time
}

// read parses the driver's stdout until it ends, then waits for the
// process and says so.
func (a *app) read(stdout io.Reader, log *os.File) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, "stdout: "+line)
		if ev, ok := parseEvent(line); ok {
			a.mu.Lock()
			a.events = append(a.events, ev)
			close(a.changed)
			a.changed = make(chan struct{})
			a.mu.Unlock()
		}
	}
	_, _ = io.Copy(io.Discard, stdout) // a line past the buffer: drain to EOF
	err := a.cmd.Wait()
	a.mu.Lock()
	a.exitErr, a.exitAt = err, time.Now()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
	log.Close()
	close(a.done)
}

// snapshot is the events so far and the channel the next change closes.
func (a *app) snapshot() ([]event, chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.events, a.changed
}

func (a *app) exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// exitCode is the process's exit code once it has exited (-1 for a
// signal).
func (a *app) exitCode() int {
	<-a.done
	var ee *exec.ExitError
	if errors.As(a.exitErr, &ee) {
		return ee.ExitCode()
	}
	if a.exitErr != nil {
		return -1
	}
	return 0
}

// waitFor waits until cond holds of the events, at most within; an error
// if the process exits first or ctx ends.
func (a *app) waitFor(ctx context.Context, within time.Duration, what string, cond func([]event) bool) error {
	t := time.NewTimer(within)
	defer t.Stop()
	for {
		evs, changed := a.snapshot()
		if cond(evs) {
			return nil
		}
		if a.exited() {
			return fmt.Errorf("%s app %s exited (code %d) before %s; its log: %s", a.system, a.spec.name, a.exitCode(), what, a.log)
		}
		select {
		case <-changed:
		case <-t.C:
			return fmt.Errorf("%s app %s: no %s within %s; its log: %s", a.system, a.spec.name, what, within, a.log)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitEvent waits for the first event of kind.
func (a *app) waitEvent(ctx context.Context, within time.Duration, kind string) (event, error) {
	err := a.waitFor(ctx, within, kind, func(evs []event) bool { _, ok := first(evs, kind); return ok })
	ev, _ := first(a.eventsNow(), kind)
	return ev, err
}

func (a *app) eventsNow() []event {
	evs, _ := a.snapshot()
	return evs
}

// waitExit waits at most within for the process to exit, and kills it
// past that.
func (a *app) waitExit(ctx context.Context, within time.Duration) error {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-a.done:
		return nil
	case <-t.C:
		a.kill()
		return fmt.Errorf("%s app %s did not exit within %s: killed; its log: %s", a.system, a.spec.name, within, a.log)
	case <-ctx.Done():
		a.kill()
		return ctx.Err()
	}
}

// release ends a holding driver's hold (its stdin ends).
func (a *app) release() { _ = a.stdin.Close() }

// kill SIGKILLs the driver, by pid, unless it has exited, and waits for it.
func (a *app) kill() {
	if a.exited() {
		return
	}
	_ = syscall.Kill(a.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
	}
}

// ok reports whether the app did all it was asked: exit 0 and, with a
// job, its end.
func (a *app) ok() bool {
	if a.exitCode() != 0 {
		return false
	}
	_, ended := first(a.eventsNow(), "job-end")
	return a.spec.tasks == 0 || ended
}

func first(evs []event, kind string) (event, bool) {
	for _, ev := range evs {
		if ev.kind == kind {
			return ev, true
		}
	}
	return event{}, false
}
