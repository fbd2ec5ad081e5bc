package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

// appCommand is `berth app ID` (an app's status as JSON), with `berth app
// limit ID N` and `berth app kill-executors ID EXEC[,EXEC...]`.
func appCommand() *cli.Command {
	cmd := showCommand("app", "an app's", (*client.Client).App)
	cmd.ArgsUsage = "ID"
	cmd.Description = `berth app ID prints the app's status as JSON.
berth app limit ID N sets its executor limit; berth app kill-executors ID 3,4
kills some of its executors.`
	cmd.Subcommands = []*cli.Command{
		{
			Name:      "limit",
			Usage:     "set an app's executor limit: the most executors it may hold (dynamic allocation's target)",
			ArgsUsage: "ID N",
			Description: `PUT /v1/apps/ID/executor-limit {"limit": N}. Executors start until the app
holds N (and its cores allow). A limit below what runs kills nothing: the
executors beyond it run on until they end or are killed (berth app
kill-executors, or the app's own client), and none new starts meanwhile, as in
Spark, where the driver chooses which to let go.`,
			Action: func(c *cli.Context) error {
				args, err := positional(c, "berth app limit ID N", 2)
				if err != nil {
					return err
				}
				n, err := strconv.Atoi(args[1])
				if err != nil || n < 0 {
					return fmt.Errorf("limit %q: want a number of executors, 0 or more (usage: berth app limit ID N)", args[1])
				}
				cl, err := newClient(c)
				if err != nil {
					return err
				}
				ctx, cancel := callCtx(c)
				defer cancel()
				if err := cl.SetExecutorLimit(ctx, args[0], n); err != nil {
					return err
				}
				id := termtext.Escape(args[0])
				fmt.Fprintf(c.App.Writer, "executor limit of app %s set to %d\n", id, n)
				// What becomes of what runs beyond it, as status says it.
				if st, err := cl.App(ctx, args[0]); err == nil && st.Waiting != "" {
					fmt.Fprintf(c.App.Writer, "%s\n", termtext.Escape(st.Waiting))
				}
				return nil
			},
		},
		{
			Name:      "kill-executors",
			Usage:     "kill some of an app's executors (its limit does not change: placement may start others)",
			ArgsUsage: "ID EXEC[,EXEC...]",
			Action: func(c *cli.Context) error {
				args, err := positional(c, "berth app kill-executors ID EXEC[,EXEC...]", 2)
				if err != nil {
					return err
				}
				var ids []int
				for _, s := range strings.Split(args[1], ",") {
					n, err := strconv.Atoi(strings.TrimSpace(s))
					if err != nil || n < 0 {
						return fmt.Errorf("executor id %q: want a number (usage: berth app kill-executors ID EXEC[,EXEC...])", s)
					}
					ids = append(ids, n)
				}
				cl, err := newClient(c)
				if err != nil {
					return err
				}
				ctx, cancel := callCtx(c)
				defer cancel()
				if err := cl.KillExecutors(ctx, args[0], ids); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "killing executors %s of app %s\n", termtext.Escape(args[1]), termtext.Escape(args[0]))
				return nil
			},
		},
	}
	return cmd
}

// waitAppCommand is `berth wait app ID`.
func waitAppCommand() *cli.Command {
	return &cli.Command{
		Name:      "app",
		Usage:     "wait for an app to end, print its final state; exit 0 only if it FINISHED",
		ArgsUsage: "ID",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", EnvVars: env("wait-app", "timeout"),
				Usage: "give up after this long (0: wait as long as it takes)"},
			&cli.DurationFlag{Name: "poll", Value: time.Second, EnvVars: env("wait-app", "poll"),
				Usage: "how often to ask the master for the app's state"},
		},
		Action: func(c *cli.Context) error {
			args, err := positional(c, "berth wait app ID [--timeout D]", 1)
			if err != nil {
				return err
			}
			ctx, cancel, err := waitContext(c)
			if err != nil {
				return err
			}
			defer cancel()
			if p := c.Duration("poll"); p <= 0 {
				return fmt.Errorf("invalid value %s for flag --poll: must be positive", p)
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			st, err := cl.WaitApp(ctx, args[0], c.Duration("poll"))
			if err != nil {
				return err
			}
			line := string(st.State)
			if st.Message != "" {
				line += ": " + st.Message
			}
			fmt.Fprintln(c.App.Writer, termtext.Escape(line))
			if st.State != wire.AppFinished {
				return cli.Exit(termtext.Escape(fmt.Sprintf("app %s ended %s", st.ID, st.State)), 1)
			}
			return nil
		},
	}
}

// detachFlag is berth run's --detach.
func detachFlag() cli.Flag {
	return &cli.BoolFlag{Name: "detach", EnvVars: env("run", "detach"),
		Usage: "register the app, print its id and exit: no client holds it, so it runs until berth kill app ID (the master does not end it for want of a client)"}
}

// runDetached is berth run --detach once the app is registered: its id
// on stdout, what to do with it on stderr.
func runDetached(c *cli.Context, id string) error {
	fmt.Fprintln(c.App.Writer, termtext.Escape(id))
	fmt.Fprintf(c.App.ErrWriter, "registered app %s, detached: berth app %s shows it, berth logs executor %s EXEC its output, berth kill app %s ends it\n",
		termtext.Escape(id), termtext.Escape(id), termtext.Escape(id), termtext.Escape(id))
	return nil
}

// waitingEvery is how often berth run asks why its app waits.
const waitingEvery = 2 * time.Second

// reportWaiting prints, as berth status does, why the app waits whenever
// that changes (numbers aside: a countdown is no news), as a line in
// berth run's event format, until ctx ends.
func reportWaiting(ctx context.Context, cl *client.Client, id string, out io.Writer) {
	last := ""
	for {
		if st, err := cl.App(ctx, id); err == nil && !st.State.Finished() {
			if key := withoutDigits(st.Waiting); st.Waiting != "" && key != last {
				fmt.Fprintln(out, formatWaiting(st.Waiting, time.Now()))
				last = key
			} else if st.Waiting == "" {
				last = ""
			}
		}
		if !poll.Sleep(ctx, waitingEvery) {
			return
		}
	}
}

// formatWaiting is a line of berth run's output for a reason to wait.
func formatWaiting(why string, now time.Time) string {
	return termtext.Escape(fmt.Sprintf("%s  %-15s  %s", now.Format("2006-01-02 15:04:05.000"), "waiting", why))
}

func withoutDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r == '.' {
			return -1
		}
		return r
	}, s)
}
