package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:      "submit",
		Usage:     "run a driver in the cluster (cluster mode) and print its id",
		ArgsUsage: "-- ARGV...",
		Description: `The master picks a worker with the cores and memory free and the worker
starts ARGV there, with BERTH_MASTER and its own credential (BERTH_TOKEN) in
its environment so the driver can register its app. ARGV must exist on the
workers. --queue and --priority place it among the cluster's queues.

--port, --check-* and --restart-* give the driver ports, health checks and
a restart policy, as berth run does for executors (docs/HEALTH.md); --file
takes the whole driver as the API's JSON (a DriverDescription), the flags
given overriding its values and ARGV, if given, its command.

With --wait, berth polls until the driver ends, prints its final state and
exits 0 only if it is FINISHED.

The submission goes out under an idempotency key, so berth retries it through
a master failover without ever starting the driver twice. Should it give up
with the outcome unknown, it prints the key: the same command with
--idempotency-key KEY is then safe to run again, and prints the driver's id
if the first attempt did submit it.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", EnvVars: env("submit", "name"), Usage: "the driver's name, as status and the UI list it (default: the base name of ARGV[0])"},
			&cli.BoolFlag{Name: "supervise", EnvVars: env("submit", "supervise"),
				Usage: "restart the driver if it exits non-zero or its worker is lost"},
			&cli.IntFlag{Name: "cores", Value: 1, EnvVars: env("submit", "cores"),
				Usage: "cores the driver needs on its worker"},
			&cli.StringFlag{Name: "memory", Value: "512m", EnvVars: env("submit", "memory"),
				Usage: "memory the driver needs on its worker (512m, 2g)"},
			&cli.StringSliceFlag{Name: "env", EnvVars: env("submit", "env"),
				Usage: "`NAME=VALUE` added to the driver's environment; repeat it (the variable takes a comma-separated list)"},
			&cli.StringSliceFlag{Name: "resource", EnvVars: env("submit", "resource"),
				Usage: "`NAME=AMOUNT` of a custom resource the driver needs, e.g. gpu=1; repeat it"},
			&cli.BoolFlag{Name: "wait", EnvVars: env("submit", "wait"),
				Usage: "wait for the driver to end; exit 0 only if it FINISHED"},
			pollFlag("submit"),
			&cli.StringFlag{Name: "idempotency-key", EnvVars: env("submit", "idempotency-key"),
				Usage: "`KEY` that makes this submission safe to repeat: the same key gets the same driver (default: a random key)"},
		}, append(append(runSubmitFlags("submit"), constraintFlag("submit")), healthFlags("submit", "driver (a DriverDescription)")...)...),
		Action: func(c *cli.Context) error {
			desc, err := driverDescription(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			key := c.String("idempotency-key")
			if key == "" {
				key = client.NewIdempotencyKey()
			}
			ctx, cancel := callCtx(c)
			defer cancel()
			id, err := cl.SubmitDriver(ctx, desc, client.WithIdempotencyKey(key))
			if errors.Is(err, client.ErrUnknownOutcome) {
				return hinted{err, "the driver may have been submitted; to retry safely, run the same command with --idempotency-key " + key}
			}
			if err != nil {
				return submissionFailed(err)
			}
			fmt.Fprintln(c.App.Writer, termtext.Escape(id))
			if !c.Bool("wait") {
				return nil
			}
			return waitDriver(c, c.Context, id)
		},
	}
}

// driverDescription is the driver berth submit asks for: --file's, if
// given, with the flags given over it (a flag's default fills what the
// file leaves out).
func driverDescription(c *cli.Context) (wire.DriverDescription, error) {
	var d wire.DriverDescription
	file, err := readSpecFile(c, &d)
	if err != nil {
		return d, err
	}
	f := &flagReader{c: c}
	overrideFrom(c, "cores", &d.Cores, func(n string) int { return f.count(n, 1) })
	overrideFrom(c, "memory", &d.MemoryMB, f.memory)
	overrideFrom(c, "queue", &d.Queue, f.queue)
	overrideFrom(c, "priority", &d.Priority, f.priority)
	overrideFrom(c, "stop-after-disconnect", &d.StopAfterDisconnect, f.stopAfterDisconnect)
	d.Env = mergeMap(d.Env, f.env("env"))
	d.Resources = mergeMap(d.Resources, f.resources("resource"))
	if c.IsSet("supervise") {
		d.Supervise = c.Bool("supervise")
	}
	if c.NArg() > 0 || len(d.Command) == 0 {
		d.Command = f.argv("driver")
	}
	if f.err != nil {
		return d, f.err
	}
	if c.IsSet("name") || d.Name == "" {
		d.Name = c.String("name")
	}
	if d.Name == "" {
		d.Name = termtext.Escape(filepath.Base(d.Command[0])) // as berth run names an app
	}
	if err := readHealth(c, file, &d.Ports, &d.Checks, &d.Restart); err != nil {
		return d, err
	}
	return d, readConstraints(c, &d.Constraints)
}

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:  "wait",
		Usage: "wait for something to end",
		Subcommands: []*cli.Command{{
			Name:      "driver",
			Usage:     "wait for a driver to end, print its final state; exit 0 only if it FINISHED",
			ArgsUsage: "ID",
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "timeout", EnvVars: env("wait", "timeout"),
					Usage: "give up after this long (0: wait as long as it takes)"},
				pollFlag("wait"),
			},
			Action: func(c *cli.Context) error {
				args, err := positional(c, "berth wait driver ID [--timeout D]", 1)
				if err != nil {
					return err
				}
				ctx, cancel, err := waitContext(c)
				if err != nil {
					return err
				}
				defer cancel()
				return waitDriver(c, ctx, args[0])
			},
		}, waitAppCommand()},
	}
}

// waitDriver waits for driver id to end and prints its final state; the
// command fails unless it FINISHED.
func waitDriver(c *cli.Context, ctx context.Context, id string) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	st, err := cl.WaitDriver(ctx, id, c.Duration("poll"))
	if err != nil {
		return err
	}
	line := string(st.State)
	if st.ID != id {
		line += " (as " + st.ID + ", relaunched)"
	}
	if st.ExitCode != nil {
		line += fmt.Sprintf(" exit code %d", *st.ExitCode)
	}
	if st.Message != "" {
		line += ": " + st.Message
	}
	fmt.Fprintln(c.App.Writer, termtext.Escape(line)) // the state, id and message are the master's and the driver's
	if st.State != wire.DriverFinished {
		return cli.Exit(fmt.Sprintf("driver %s ended %s", st.ID, st.State), 1)
	}
	return nil
}

// waitContext is berth wait's context: bounded by --timeout when it is
// positive (0: as long as it takes; negative: refused).
func waitContext(c *cli.Context) (context.Context, context.CancelFunc, error) {
	switch d := c.Duration("timeout"); {
	case d < 0:
		return nil, nil, fmt.Errorf("invalid value %s for flag --timeout: must not be negative", d)
	case d > 0:
		ctx, cancel := context.WithTimeout(c.Context, d)
		return ctx, cancel, nil
	}
	return c.Context, func() {}, nil
}
