package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

// unregisterGrace is how long run waits for the appRemoved event after it
// unregistered the app on a signal.
const unregisterGrace = 10 * time.Second

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "register an app whose executors run ARGV and follow its events (client mode)",
		ArgsUsage: "-- ARGV...",
		Description: `Registers the app, then prints one line per event: time, type, executor id,
worker, cores, state and message. The open event stream keeps the app's lease
with the master. Ctrl-C or SIGTERM unregisters the app (it ends FINISHED); a
second one leaves at once. berth run exits when the master removes the app:
0 if it FINISHED, 1 if it ended FAILED or KILLED.

ARGV may use the placeholders {{APP_ID}}, {{EXECUTOR_ID}}, {{CORES}} and
{{HOSTNAME}}, substituted by the worker, and {{PORT_<LABEL>}} for each --port.

Health (docs/HEALTH.md): --port gives each executor a port by label,
--check-http, --check-tcp and --check-exec make its worker check it
(--check-interval and the other --check-* flags apply to each of them), and
--restart-* set the app's restart policy. E.g.

  berth run --port http --check-http http:/health --check-failures 3 \
    --restart-attempts 3 --restart-interval 10m -- /opt/svc --listen {{PORT_HTTP}}

--file takes the whole app as the API's JSON (an AppDescription); the flags
given override its values, and ARGV, if given, its command.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", EnvVars: env("run", "name"), Usage: "the app's name (default: the base name of ARGV[0])"},
			&cli.IntFlag{Name: "max-cores", EnvVars: env("run", "max-cores"), Usage: "most cores the app holds (0: the master's default)"},
			&cli.IntFlag{Name: "cores-per-executor", EnvVars: env("run", "cores-per-executor"), Usage: "cores of each executor (0: all an executor can get on its worker)"},
			&cli.StringFlag{Name: "executor-memory", Value: "1g", EnvVars: env("run", "executor-memory"), Usage: "memory of each executor (512m, 2g)"},
			&cli.IntFlag{Name: "executor-limit", EnvVars: env("run", "executor-limit"), Usage: "most executors the app starts with (unset: no bound)"},
			&cli.StringSliceFlag{Name: "env", EnvVars: env("run", "env"), Usage: "`NAME=VALUE` added to the executors' environment; repeat it"},
			&cli.StringSliceFlag{Name: "executor-resource", EnvVars: env("run", "executor-resource"), Usage: "`NAME=AMOUNT` of a custom resource each executor needs, e.g. gpu=1, or gpu=0.5 to share one; repeat it"},
			detachFlag(),
		}, append(append(runSubmitFlags("run"), append(gangFlags("run"), constraintFlag("run"))...), healthFlags("run", "app (an AppDescription)")...)...),
		Action: runApp,
	}
}

func runApp(c *cli.Context) error {
	desc, err := appDescription(c)
	if err != nil {
		return err
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	// Signals are handled here, not through c.Context: the first one
	// unregisters, a second one leaves.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	desc.Detached = desc.Detached || c.Bool("detach")
	// Not cut short by a signal: an interrupted registration could leave an
	// app registered that we know nothing of. The signal waits in sigs.
	base := context.WithoutCancel(c.Context)
	regCtx, cancel := context.WithTimeout(base, globalTimeout(c)+lastAttemptGrace)
	id, err := cl.RegisterApp(regCtx, desc)
	cancel()
	if err != nil {
		return submissionFailed(err)
	}
	if desc.Detached {
		return runDetached(c, id)
	}
	fmt.Fprintf(c.App.ErrWriter, "registered app %s; Ctrl-C unregisters it\n", termtext.Escape(id))

	evCtx, stopEvents := context.WithCancel(base)
	defer stopEvents()
	go reportWaiting(evCtx, cl, id, c.App.Writer)
	var final *wire.AppStatus
	done := make(chan error, 1)
	go func() {
		done <- cl.Events(evCtx, id, func(ev wire.AppEvent) error {
			fmt.Fprintln(c.App.Writer, formatEvent(ev, time.Now()))
			if ev.Type == wire.EventAppRemoved {
				final = ev.App
			}
			return nil
		})
	}()

	unregistered := false
	for {
		select {
		case err := <-done:
			if err != nil && !(unregistered && errors.Is(err, context.Canceled)) {
				return err
			}
			if err == nil && final == nil {
				// appRemoved without the app: ask for its final state.
				ctx, cancel := context.WithTimeout(base, globalTimeout(c))
				if st, err := cl.App(ctx, id); err == nil {
					final = &st
				}
				cancel()
			}
			return appOutcome(id, final, unregistered)
		case <-sigs:
			if unregistered {
				return cli.Exit("second signal: leaving without waiting for the master", 1)
			}
			unregistered = true
			ctx, cancel := context.WithTimeout(base, globalTimeout(c))
			err := cl.UnregisterApp(ctx, id)
			cancel()
			if err != nil {
				return fmt.Errorf("on signal: %w", err)
			}
			fmt.Fprintf(c.App.ErrWriter, "unregistered app %s\n", termtext.Escape(id))
			time.AfterFunc(unregisterGrace, stopEvents)
		}
	}
}

// appOutcome turns the app's end into the command's result.
func appOutcome(id string, final *wire.AppStatus, unregistered bool) error {
	if final == nil {
		if unregistered {
			return nil // unregistered, appRemoved not seen within the grace
		}
		return fmt.Errorf("app %s: event stream ended without its final state", id)
	}
	if final.State == wire.AppFinished {
		return nil
	}
	msg := fmt.Sprintf("app %s ended %s", id, final.State)
	if final.Message != "" {
		msg += ": " + final.Message
	}
	return cli.Exit(msg, 1)
}

// appDescription is the app berth run registers: --file's, if given, with
// the flags given over it (a flag's default fills what the file leaves
// out).
func appDescription(c *cli.Context) (wire.AppDescription, error) {
	var d wire.AppDescription
	file, err := readSpecFile(c, &d)
	if err != nil {
		return d, err
	}
	f := &flagReader{c: c}
	overrideFrom(c, "max-cores", &d.MaxCores, func(n string) int { return f.count(n, 0) })
	overrideFrom(c, "cores-per-executor", &d.CoresPerExecutor, func(n string) int { return f.count(n, 0) })
	overrideFrom(c, "executor-memory", &d.MemoryPerExecutorMB, f.memory)
	overrideFrom(c, "queue", &d.Queue, f.queue)
	overrideFrom(c, "priority", &d.Priority, f.priority)
	overrideFrom(c, "stop-after-disconnect", &d.StopAfterDisconnect, f.stopAfterDisconnect)
	if c.IsSet("executor-limit") {
		n := f.count("executor-limit", 0)
		d.InitialExecutorLimit = &n
	}
	d.Env = mergeMap(d.Env, f.env("env"))
	d.ResourcesPerExecutor = mergeMap(d.ResourcesPerExecutor, f.resources("executor-resource"))
	if c.NArg() > 0 || len(d.Command) == 0 {
		d.Command = f.argv("executor")
	}
	if f.err != nil {
		return d, f.err
	}
	if err := readHealth(c, file, &d.Ports, &d.Checks, &d.Restart); err != nil {
		return d, err
	}
	if err := readConstraints(c, &d.Constraints); err != nil {
		return d, err
	}
	if err := readGang(c, &d); err != nil {
		return d, err
	}
	if c.IsSet("name") || d.Name == "" {
		d.Name = c.String("name")
	}
	if d.Name == "" {
		// Escaped: the master refuses a name with control characters,
		// which a program's path may hold; its visible form is a fine name.
		d.Name = termtext.Escape(filepath.Base(d.Command[0]))
	}
	return d, nil
}

// formatEvent renders one event as a line: time, type, then what the event
// carries. The time is the master's, when it says (in received's zone);
// else when the event was received. What the event carries comes from the
// master and from the app's processes (their messages): the line is
// escaped (termtext), so that none of it acts on the terminal or breaks
// the line.
func formatEvent(ev wire.AppEvent, received time.Time) string {
	at := received
	if !ev.Time.IsZero() {
		at = ev.Time.In(received.Location())
	}
	line := fmt.Sprintf("%s  %-15s", at.Format("2006-01-02 15:04:05.000"), ev.Type)
	switch ev.Type {
	case wire.EventSnapshot, wire.EventAppRemoved:
		if a := ev.App; a != nil {
			line += fmt.Sprintf("  app=%s state=%s cores=%d executors=%s", a.ID, a.State, a.CoresGranted, executorsByState(a.Executors))
			if a.Message != "" && ev.Message == "" {
				line += "  " + a.Message
			}
		}
	case wire.EventMasterChanged:
		line += fmt.Sprintf("  leader=%s epoch=%d", orDash(ev.Leader), ev.Epoch)
	}
	if e := ev.Executor; e != nil {
		line += fmt.Sprintf("  exec=%d worker=%s cores=%d state=%s", e.ID, orDash(e.WorkerID), e.Cores, e.State)
		if e.ExitCode != nil {
			line += fmt.Sprintf(" exit=%d", *e.ExitCode)
		}
		if e.Health != "" {
			line += fmt.Sprintf(" health=%s", e.Health)
		}
		if len(e.Ports) > 0 {
			line += " ports=" + formatPorts(e.Ports)
		}
		if e.Message != "" && ev.Message == "" {
			line += "  " + e.Message
		}
	}
	if ev.Message != "" {
		line += "  " + ev.Message
	}
	return termtext.Escape(line)
}
