// Command worker is berth's worker daemon: it registers with the masters and
// runs the executors and drivers they ask for as child processes.
//
//	worker --master http://10.0.0.1:7077,http://10.0.0.2:7077 --secret ... --host 10.0.0.5
//	worker --master http://127.0.0.1:7077          # loopback only, no secret
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/config"
	"github.com/berth-cluster/berth/internal/credentials"
	"github.com/berth-cluster/berth/internal/logging"
	"github.com/berth-cluster/berth/internal/units"
	"github.com/berth-cluster/berth/internal/version"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
	"github.com/berth-cluster/berth/worker"
)

const description = `Registers with the leading master among --master (following redirects to the
leader, retrying with backoff), heartbeats, and runs the executors and drivers
the master asks for, each in its own process group and its own directory:
<work-dir>/<appId>/<executorId>/ and <work-dir>/drivers/<driverId>/, holding
the process's stdout and stderr files.

Children are started from their argv, never through a shell. They do NOT
inherit the worker's environment, only PATH, HOME, TMPDIR and LANG, plus the
BERTH_* variables (app, executor or driver id, cores, memory, worker id and
host, master list; a driver also gets BERTH_TOKEN, a credential of its own
for its apps, never the cluster's secret), plus the env of the launch
request; the BERTH_* variables win over it. If the worker dies, even by SIGKILL, its children get
SIGKILL.

A master failure never kills a child: the worker looks for the new leader
and registers again under the same id. On SIGTERM or SIGINT the worker kills
every child (SIGTERM, SIGKILL after --kill-grace), reports their final states
to the master and exits 0; a second signal exits at once.

Without credentials (--tls-*-file, --secret-file) the API is
unauthenticated and --host must be a loopback address. With TLS the worker's
id is its certificate's name and it takes commands only from masters. Exit status: 0 after a signal, 2 for bad flags, 1 otherwise.

Every flag can also be set through the environment variable shown with it,
or in the file --config names, under its own name (kill-grace = "5s"): the
command line beats the environment, which beats the file, which beats the
default.`

func main() {
	worker.RunGuardianIfAsked() // this process may be a worker's guardian
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func env(name string) []string { return []string{"BERTH_WORKER_" + name} }

// run is main without os.Exit, returning the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	code := 0
	app := &cli.App{
		Name:            "worker",
		Usage:           "run berth's worker daemon",
		UsageText:       "worker --master URL[,URL...] [--secret S] [options]",
		HideHelpCommand: true,
		Description:     description,
		Writer:          stdout,
		ErrWriter:       stderr,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "master", Usage: "comma-separated API URLs of the masters, e.g. http://10.0.0.1:7077,http://10.0.0.2:7077 (required)", EnvVars: []string{"BERTH_MASTER"}},
			&cli.StringFlag{Name: "secret", Usage: "the operator secret (prefer --secret-file); without it or TLS the API is unauthenticated and loopback only", EnvVars: []string{wire.EnvSecret}},
			&cli.StringFlag{Name: "host", Value: worker.DefaultHost, Usage: "address the API listens on", EnvVars: env("HOST")},
			&cli.StringFlag{Name: "advertise-host", Usage: "host given to the master and the children (default: --host, or the hostname if --host is 0.0.0.0 or ::)", EnvVars: env("ADVERTISE_HOST")},
			&cli.IntFlag{Name: "port", Value: 0, Usage: "port of the API; 0 picks a free one", EnvVars: env("PORT")},
			&cli.StringFlag{Name: "id", Usage: "worker id (default: worker-YYYYMMDDhhmmss-host-port)", EnvVars: append(env("ID"), env("NODE_ID")...)}, // BERTH_WORKER_NODE_ID: its name in earlier releases
			&cli.StringFlag{Name: "cores", Usage: fmt.Sprintf("cores offered to the master, 1 to %d (default, or 0: the machine's, %d)", wire.MaxCores, runtime.NumCPU()), EnvVars: env("CORES")},
			&cli.StringFlag{Name: "memory", Usage: "memory offered to the master, e.g. 512m, 2g (default: the machine's memory minus 1g, at least 1g)", EnvVars: env("MEMORY")},
			&cli.StringFlag{Name: "log-max-size", Value: "10m", Usage: "roll each executor's and driver's stdout and stderr at this size (0: one file each, unbounded)", EnvVars: env("LOG_MAX_SIZE")},
			&cli.StringFlag{Name: "port-range", Usage: "the ports given to processes that ask for them by label (FIRST-LAST; docs/HEALTH.md): keep them for berth; no two workers of one host may share one (default: a block of 1000 of 20000-32000 of this worker's own on the host)", EnvVars: env("PORT_RANGE")},
			&cli.StringFlag{Name: "host-dir", Usage: "where the workers of this host take their slots, so that no two hand out one identity (--run-as) or one port; every worker of a host must share it (default: /var/lib/berth/host for root, $TMPDIR/berth-host-UID for a user)", EnvVars: env("HOST_DIR")},
			&cli.StringFlag{Name: "min-free-disk", Value: "64m", Usage: "below this much free space in the work dir the worker reports its disk full and the master places nothing new here until space returns (0: never)", EnvVars: env("MIN_FREE_DISK")},
			&cli.IntFlag{Name: "log-max-files", Value: worker.DefaultLogMaxFiles, Usage: "rolled log files kept besides the current one: with the defaults at most 100 MiB per stream, 200 MiB per process", EnvVars: env("LOG_MAX_FILES")},
			&cli.StringSliceFlag{Name: "resource", Usage: "a custom resource offered to executors and drivers (repeatable): NAME=COUNT (addresses 0 to COUNT-1) or NAME:discovery=PATH (a script printing {\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]})", EnvVars: env("RESOURCES")},
			&cli.StringSliceFlag{Name: "label", Usage: "a label of this worker that apps and drivers may constrain placement by (repeatable): KEY=VALUE, e.g. gpu-model=T4 (docs/PLACEMENT.md)", EnvVars: env("LABELS")},
			&cli.IntFlag{Name: "pids-limit", Value: 4096, Usage: "processes each executor and driver may have (its cgroup's pids.max)", EnvVars: env("PIDS_LIMIT")},
			&cli.DurationFlag{Name: "drain-deadline", Usage: "on SIGTERM, drain first: the master places nothing new here and what runs has this long to end before it is killed and replaced elsewhere (0: kill at once)", EnvVars: env("DRAIN_DEADLINE")},
			&cli.IntFlag{Name: "max-connections", Usage: "open API connections; at the cap a new one closes the oldest idle one, or, if all are serving requests, takes one of a few reserve connections that answer only /healthz (503 otherwise); beyond those, more wait to be accepted (0: three quarters of the file descriptor limit)", EnvVars: env("MAX_CONNECTIONS")},
			&cli.StringFlag{Name: "run-as", Usage: "'dynamic': run each app's executors and each driver as a uid and gid of its own (from 2000000000 up, no supplementary groups, a home of its own), so that tenants cannot signal, trace or read each other (the worker must be root); unset: the worker's own user", EnvVars: env("RUN_AS")},
			&cli.StringFlag{Name: "work-dir", Value: "./work", Usage: "directory of the children's work directories and logs; created if missing", EnvVars: env("WORK_DIR")},
			&cli.DurationFlag{Name: "kill-grace", Value: worker.DefaultKillGrace, Usage: "time between SIGTERM and SIGKILL when killing a child (0: the default)", EnvVars: env("KILL_GRACE")},
			&cli.DurationFlag{Name: "cleanup-ttl", Value: worker.DefaultCleanupTTL, Usage: "remove the directory (and logs) of an app or driver that no longer runs here once nothing in it changed for this long; 0 keeps them for ever", EnvVars: env("CLEANUP_TTL")},
			&cli.DurationFlag{Name: "cleanup-interval", Value: worker.DefaultCleanupInterval, Usage: "time between two sweeps of the work directory (0: the default)", EnvVars: env("CLEANUP_INTERVAL")},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: env("LOG_LEVEL")},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json", EnvVars: env("LOG_FORMAT")},
		}, append(credentials.Flags(),
			config.Flag("BERTH_WORKER_CONFIG"),
			config.PrintFlag(),
			version.Flag(),
		)...),
		// Report bad flags as one line on stderr, not with the whole help.
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
		// Keep the exit status ours: urfave would call os.Exit itself.
		ExitErrHandler: func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 { // as the master: a stray word is a mistake, not ignored
				return usageError{fmt.Errorf("unexpected argument %q (flags only; see --help)", c.Args().First())}
			}
			if shown, err := version.Printed(c); shown {
				return err
			}
			src, err := config.Load(c, args)
			if err != nil {
				return usageError{err}
			}
			if c.Bool("print-config") {
				return src.Print(stdout, c)
			}
			// A value the file gave and the worker refuses is named with
			// its file, line and key.
			return src.Annotate(serve(c, stderr))
		},
	}
	if err := app.Run(args); err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		code = 1
		var ue usageError
		if errors.As(err, &ue) {
			code = 2
		}
	}
	return code
}

// serve runs the worker until a signal.
func serve(c *cli.Context, stderr io.Writer) error {
	cfg, logger, err := configFrom(c, stderr)
	if err != nil {
		return usageError{err}
	}
	w, err := worker.New(cfg, logger)
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal gets the default action: exit now
	}()
	return w.Run(ctx)
}

// usageError is a bad flag or input: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// configFrom turns the flags into a worker.Config and a logger. It only
// parses (integers, sizes, resources) and translates what a flag's zero
// means; worker.New checks the values, naming the flags.
func configFrom(c *cli.Context, stderr io.Writer) (worker.Config, *slog.Logger, error) {
	var errs []error
	logger, err := logging.New(stderr, c.String("log-level"), c.String("log-format"))
	if err != nil {
		errs = append(errs, fmt.Errorf("--log-level/--log-format: %w", err))
	}
	creds, err := credentials.FromFlags(c, security.RoleWorker)
	if err != nil {
		errs = append(errs, err)
	}
	cfg := worker.Config{
		Masters:         strings.Split(c.String("master"), ","),
		Secret:          creds.Secret,
		TLS:             creds.TLS,
		Host:            c.String("host"),
		AdvertiseHost:   c.String("advertise-host"),
		Port:            c.Int("port"),
		ID:              c.String("id"),
		WorkDir:         c.String("work-dir"),
		RunAs:           c.String("run-as"),
		HostDir:         c.String("host-dir"),
		MaxConnections:  c.Int("max-connections"),
		DrainDeadline:   c.Duration("drain-deadline"),
		PidsLimit:       c.Int("pids-limit"),
		LogMaxFiles:     c.Int("log-max-files"),
		KillGrace:       c.Duration("kill-grace"),
		CleanupTTL:      c.Duration("cleanup-ttl"),
		CleanupInterval: c.Duration("cleanup-interval"),
	}
	// --cleanup-ttl 0 keeps everything, the Config's negative TTL; a
	// negative flag has no meaning of its own.
	switch ttl := cfg.CleanupTTL; {
	case ttl < 0:
		errs = append(errs, fmt.Errorf("--cleanup-ttl %v: want a positive duration, or 0 to keep everything", ttl))
	case ttl == 0:
		cfg.CleanupTTL = -1
	}
	if s := c.String("cores"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--cores %q: not an integer", s))
		}
		cfg.Cores = n
	}
	if res, err := worker.ParseResources(c.Context, c.StringSlice("resource")); err != nil {
		errs = append(errs, err)
	} else {
		cfg.Resources = res
	}
	for _, l := range c.StringSlice("label") {
		k, v, err := wire.ParseLabel(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("--label: %w", err))
			continue
		}
		if _, dup := cfg.Labels[k]; dup {
			errs = append(errs, fmt.Errorf("--label %s: given twice", k))
			continue
		}
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		cfg.Labels[k] = v
	}
	if s := c.String("port-range"); s != "" {
		if r, err := wire.ParsePortRange(s); err != nil {
			errs = append(errs, fmt.Errorf("--port-range: %w", err))
		} else {
			cfg.PortRange = r
		}
	}
	// --min-free-disk 0 is never: the Config's negative size.
	switch s := c.String("min-free-disk"); s {
	case "0":
		cfg.MinFreeDiskMB = -1
	default:
		if mb, err := units.ParseMemoryMB(s); err != nil {
			errs = append(errs, fmt.Errorf("--min-free-disk: %w", err))
		} else {
			cfg.MinFreeDiskMB = mb
		}
	}
	// --log-max-size 0 is one file, unbounded: the Config's negative size.
	switch s := c.String("log-max-size"); s {
	case "0":
		cfg.LogMaxSize = -1
	default:
		if mb, err := units.ParseMemoryMB(s); err != nil {
			errs = append(errs, fmt.Errorf("--log-max-size: %w", err))
		} else {
			cfg.LogMaxSize = int64(mb) << 20
		}
	}
	if s := c.String("memory"); s != "" {
		mb, err := units.ParseMemoryMB(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--memory: %w", err))
		}
		cfg.MemoryMB = mb
	}
	return cfg, logger, errors.Join(errs...)
}
