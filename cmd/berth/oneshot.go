package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

// onID is a one-shot command on the single ID argument: call asks the
// masters, bounded by --timeout, and show prints the answer. checks run
// once the arguments are read (a flag may follow the ID) and before the
// client is made, so that a bad flag of the command is the error reported.
func onID[T any](c *cli.Context, usage string, call func(*client.Client, context.Context, string) (T, error), show func(id string, v T) error, checks ...func() error) error {
	args, err := positional(c, usage, 1)
	if err != nil {
		return err
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(c)
	defer cancel()
	v, err := call(cl, ctx, args[0])
	if err != nil {
		return err
	}
	return show(args[0], v)
}

func killCommand() *cli.Command {
	return &cli.Command{
		Name:  "kill",
		Usage: "kill an app or a driver",
		Subcommands: []*cli.Command{
			{
				Name: "app", Usage: "kill an app and its executors (it ends KILLED)", ArgsUsage: "ID",
				Action: func(c *cli.Context) error {
					return onID(c, "berth kill app ID", killOnce((*client.Client).App, (*client.Client).KillApp, func(st wire.AppStatus) bool { return st.State.Finished() }),
						func(id string, k killed[wire.AppStatus]) error {
							if k.before {
								fmt.Fprintf(c.App.Writer, "app %s had already ended %s%s: nothing to kill\n", termtext.Escape(id), termtext.Escape(k.st.State), endedAt(k.st.EndedAt))
							} else {
								fmt.Fprintln(c.App.Writer, "killed app", termtext.Escape(id))
							}
							return nil
						})
				},
			},
			{
				Name: "driver", Usage: "kill a driver (it ends KILLED)", ArgsUsage: "ID",
				Action: func(c *cli.Context) error {
					return onID(c, "berth kill driver ID", killOnce((*client.Client).Driver, (*client.Client).KillDriver, func(st wire.DriverStatus) bool { return st.State.Finished() }),
						func(id string, k killed[wire.DriverStatus]) error {
							id, st := termtext.Escape(id), k.st
							switch {
							case k.before:
								fmt.Fprintf(c.App.Writer, "driver %s had already ended %s%s: nothing to kill\n", id, termtext.Escape(st.State), endedAt(st.EndedAt))
							case st.State.Finished():
								fmt.Fprintln(c.App.Writer, "killed driver", id)
							default:
								fmt.Fprintf(c.App.Writer, "killing driver %s: its worker is stopping it (berth wait driver %s)\n", id, id)
							}
							return nil
						})
				},
			},
		},
	}
}

// killed is a kill's answer: the status, and whether it had ended before
// the kill was asked (so berth does not say it killed it).
type killed[T any] struct {
	st     T
	before bool
}

// killOnce is berth kill's call: a status read first, so that an app or
// driver that had ended already is said so (a second kill printed
// "killed app"), then the kill, which answers the final status of one
// that ended meanwhile.
func killOnce[T any](get, kill func(*client.Client, context.Context, string) (T, error), ended func(T) bool) func(*client.Client, context.Context, string) (killed[T], error) {
	return func(cl *client.Client, ctx context.Context, id string) (killed[T], error) {
		if st, err := get(cl, ctx, id); err == nil && ended(st) {
			return killed[T]{st, true}, nil
		}
		st, err := kill(cl, ctx, id)
		return killed[T]{st: st}, err
	}
}

// endedAt is " at TIME" of an end, "" when unknown.
func endedAt(t *time.Time) string {
	if t == nil {
		return ""
	}
	return " at " + t.Local().Format(time.DateTime)
}

// showCommand is `berth NAME ID`: it prints what get returns as JSON. what
// names the thing in the usage, e.g. "an app's".
func showCommand[T any](name, what string, get func(*client.Client, context.Context, string) (T, error)) *cli.Command {
	return &cli.Command{
		Name: name, Usage: "print " + what + " status as JSON", ArgsUsage: "ID",
		Action: func(c *cli.Context) error {
			return onID(c, "berth "+name+" ID", get, func(_ string, st T) error {
				return printJSON(c.App.Writer, st)
			})
		},
	}
}

// workerCommand is `berth worker drain|undrain|clear ID`.
func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "drain a worker, end its drain, or clear its failures",
		Subcommands: []*cli.Command{
			{
				Name:      "drain",
				Usage:     "place nothing new on a worker; what runs there has until --deadline to end, then it is killed and replaced elsewhere",
				ArgsUsage: "ID",
				Flags: []cli.Flag{&cli.DurationFlag{Name: "deadline", Value: 10 * time.Minute, EnvVars: env("worker-drain", "deadline"),
					Usage: "how long executors and drivers may take to end on their own (at most 168h)"}},
				Action: func(c *cli.Context) error {
					// Read once the ID is: the flag may follow it (positional sets it).
					deadline := func() error {
						if d := c.Duration("deadline"); d <= 0 || d > 7*24*time.Hour {
							return fmt.Errorf("--deadline %s: want more than 0 and at most 168h", d)
						}
						return nil
					}
					return onID(c, "berth worker drain ID [--deadline 10m]", func(cl *client.Client, ctx context.Context, id string) (wire.WorkerStatus, error) {
						return cl.DrainWorker(ctx, id, c.Duration("deadline"))
					}, printWorker(c), deadline)
				},
			},
			{
				Name:      "undrain",
				Usage:     "end a worker's drain before its deadline: it is ALIVE again",
				ArgsUsage: "ID",
				Action: func(c *cli.Context) error {
					return onID(c, "berth worker undrain ID", (*client.Client).UndrainWorker, printWorker(c))
				},
			},
			{
				Name:      "clear",
				Usage:     "forget the processes that failed on a worker: it is no longer unhealthy, and no app's executors are kept off it",
				ArgsUsage: "ID",
				Description: `A worker where processes of 3 or more apps failed within 10 minutes is
unhealthy: nothing new is placed there. An app whose processes failed twice on
a worker is kept off it for the master's --exclude-duration. Both pass on
their own; berth worker clear ends them now, once the worker is fixed
(docs/HEALTH.md).`,
				Action: func(c *cli.Context) error {
					return onID(c, "berth worker clear ID", (*client.Client).ClearWorker, func(_ string, st wire.WorkerStatus) error {
						_, err := fmt.Fprintf(c.App.Writer, "cleared worker %s (%s): no longer unhealthy, no app kept off it\n", termtext.Escape(st.ID), termtext.Escape(st.State))
						return err
					})
				},
			},
		},
	}
}

// printWorker prints a worker's state after a drain or an undrain.
func printWorker(c *cli.Context) func(string, wire.WorkerStatus) error {
	return func(_ string, st wire.WorkerStatus) error {
		id, state := termtext.Escape(st.ID), termtext.Escape(st.State)
		if st.DrainDeadline != nil {
			_, err := fmt.Fprintf(c.App.Writer, "worker %s %s until %s\n", id, state, st.DrainDeadline.Local().Format(time.RFC3339))
			return err
		}
		_, err := fmt.Fprintf(c.App.Writer, "worker %s %s\n", id, state)
		return err
	}
}

// printJSON prints v indented, as berth app, driver and status --json do.
// encoding/json escapes the C0 controls but writes DEL, the C1 controls and
// the bidirectional overrides raw: termtext.EscapeJSON escapes those too,
// which changes the bytes but not the JSON's meaning, so that the output is
// as safe to read on a terminal as the tables are.
func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termtext.EscapeJSON(buf.Bytes()))
	return err
}
