// Command berth is the command line of a berth cluster: it submits drivers,
// runs apps in client mode, shows the cluster's state, kills, waits and
// fetches logs, talking to the masters' API through package client.
//
//	berth status
//	berth submit --cores 1 --memory 512m --wait -- /opt/jobs/pi --tasks 200
//	berth run --executor-memory 1g -- /opt/jobs/worker-loop
//	berth logs driver driver-20250101-0001 --stderr --tail 50
//	berth queue set etl --weight 2 --guarantee cores=8,memory=16g,gpu=2
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/credentials"
	"github.com/berth-cluster/berth/internal/logging"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	app := newApp(os.Stdout, os.Stderr)
	err := explainFailure(annotateConfig(app, app.RunContext(ctx, os.Args)))
	stop()
	if err != nil && !errors.Is(err, errHelpShown) && !errors.Is(err, errVersionShown) {
		fmt.Fprintln(os.Stderr, "berth:", errorText(err))
		code := 1
		var ec cli.ExitCoder
		if errors.As(err, &ec) && ec.ExitCode() != 0 {
			code = ec.ExitCode()
		}
		os.Exit(code)
	}
}

// errorText is err as berth prints it, escaped: errors echo what the
// masters answered (their messages quote the request, an app's or a
// driver's message) and the ids the user typed. A hinted error keeps its
// hint on a line of its own.
func errorText(err error) string {
	if h := (hinted{}); errors.As(err, &h) && h.Error() == err.Error() {
		return termtext.Escape(h.err.Error()) + "\n" + termtext.Escape(h.hint)
	}
	return termtext.Escape(err.Error())
}

// hinted is an error followed by what the user can do about it, which
// berth prints on the next line.
type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() + "\n" + h.hint }
func (h hinted) Unwrap() error { return h.err }

// env names the environment variable of a flag: BERTH_<PARTS...>.
func env(parts ...string) []string {
	return []string{"BERTH_" + strings.ToUpper(strings.ReplaceAll(strings.Join(parts, "_"), "-", "_"))}
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:  "berth",
		Usage: "submit and watch work on a berth cluster",
		Description: `Talks to the cluster's masters (--master, comma-separated). Only the leader
accepts writes: berth finds it, follows redirects and rides out a failover
for up to --timeout. Every flag can also be set with the environment variable
shown in its help, e.g. BERTH_MASTER and BERTH_SECRET, and berth's own flags
(those before the command) in the --config file (BERTH_CONFIG) under their
names: master = "https://10.0.0.1:7077". The command line beats the
environment, which beats the file. A tenant gives its token with --token or
BERTH_TOKEN instead of the secret.`,
		HideHelpCommand: true,
		Writer:          stdout,
		ErrWriter:       stderr,
		// main prints the error and picks the exit code; urfave must not
		// exit by itself.
		ExitErrHandler: func(*cli.Context, error) {},
		Before: func(c *cli.Context) error {
			c.App.Metadata = map[string]any{}
			if err := loadConfig(c); err != nil {
				return err
			}
			c.App.Metadata[timeoutKey] = c.Duration("timeout")
			return nil
		},
		OnUsageError: usageError,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "master", Value: "http://127.0.0.1:7077", EnvVars: env("master"),
				Usage: "API `URLS` of the masters, comma-separated (http(s)://host[:port], port 7077 by default; host:port alone is taken as https:// when --tls-ca-file or --tls-cert-file is given, else http://)"},
			&cli.StringFlag{Name: "secret", EnvVars: env("secret"),
				Usage: "the operator secret (prefer --secret-file: argv and environments are visible)"},
			tokenFlag(),
			&cli.DurationFlag{Name: "timeout", Value: client.DefaultRetryBudget, EnvVars: env("timeout"),
				Usage: "how long one request may take, retries and leader failover included"},
			&cli.StringFlag{Name: "log-level", Value: "warn", EnvVars: env("log-level"),
				Usage: "logging on stderr: debug, info, warn or error (debug shows retries)"},
			waitForMasterFlag(),
		}, append(credentials.Flags(), configFlags()...)...),
		Commands: []*cli.Command{
			submitCommand(),
			runCommand(),
			statusCommand(),
			killCommand(),
			logsCommand(),
			waitCommand(),
			appCommand(),
			showCommand("driver", "a driver's", (*client.Client).Driver),
			workerCommand(),
			queueCommand(),
			tenantCommand(),
			auditCommand(),
			operatorCommand(),
			masterCommand(),
			uiCommand(),
			tlsCommand(),
		},
	}
	app.Action = unknownCommand
	setUsageErrors(app.Commands)
	return app
}

// setUsageErrors gives every command the short flag errors of usageError
// and hides the help subcommand (--help does the same).
func setUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = usageError
		c.HideHelpCommand = true
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = unknownCommand
		}
		setUsageErrors(c.Subcommands)
	}
}

// newClient builds the client from the global flags; extra options come
// last.
func newClient(c *cli.Context, extra ...client.Option) (*client.Client, error) {
	logger, err := logging.New(c.App.ErrWriter, c.String("log-level"), "text")
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	timeout := globalTimeout(c)
	if timeout <= 0 {
		return nil, fmt.Errorf("--timeout %s: must be positive", timeout)
	}
	if d := c.Duration("wait-for-master"); d < 0 {
		return nil, fmt.Errorf("--wait-for-master %s: must not be negative", d)
	}
	masters, err := wire.ParseMasterURLs("--master", masterList(c))
	if err != nil {
		return nil, err
	}
	secret, opts, err := clientCredentials(c)
	if err != nil {
		return nil, err
	}
	return client.New(masters, secret, append(append(opts,
		client.WithRetryBudget(timeout),
		client.WithRequestTimeout(min(timeout, client.DefaultRequestTimeout)),
		client.WithWaitForMaster(max(c.Duration("wait-for-master"), time.Nanosecond)),
		client.WithLogger(logger)), extra...)...)
}

// callCtx bounds a one-shot command by --timeout, and a little more: the
// client stops retrying at --timeout, and the attempt under way then may
// finish, so that a write's outcome is known (cut short, it would be
// unknown).
func callCtx(c *cli.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, globalTimeout(c)+lastAttemptGrace)
}

// lastAttemptGrace is how long the last attempt of a call may run past
// --timeout: a follower holds a request up to a second for an election.
const lastAttemptGrace = 2 * time.Second

// globalTimeout is the global --timeout, which `wait driver --timeout`
// shadows in a plain lookup: Before keeps it in the app's metadata.
func globalTimeout(c *cli.Context) time.Duration {
	d, _ := c.App.Metadata[timeoutKey].(time.Duration)
	return d
}

const timeoutKey = "global-timeout"

// pollFlag is the polling interval of the commands that wait for a driver.
func pollFlag(cmd string) cli.Flag {
	return &cli.DurationFlag{Name: "poll", Value: time.Second, EnvVars: env(cmd, "poll"),
		Usage: "how often to ask the master for the driver's state"}
}
