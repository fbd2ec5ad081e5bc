// Command pi is berth's example job: it estimates Pi by Monte Carlo sampling
// spread over the executors of an app, and keeps a correct result when an
// executor or its whole worker is lost mid-job.
//
// The same binary is the driver and the executors:
//
//	pi [--tasks 200] [--samples 200000] ...       the driver
//	pi executor --driver URL                      an executor (started by workers)
//
// The driver serves tasks over HTTP and registers an app whose executors run
// this binary (os.Executable) in executor mode. Each task has a fixed seed,
// so its result is the same wherever and however often it runs; the first
// result of a task counts. Tasks leased to an executor the master reports
// lost (or that is absent from its snapshot) are re-queued at once, and any
// lease older than --task-timeout is re-queued as a safety net.
//
// Cluster mode (the worker sets BERTH_MASTER and BERTH_SECRET):
//
//	berth submit -- /opt/berth/bin/pi --tasks 200
//
// Client mode, from a shell:
//
//	pi --master http://10.0.0.1:7077 --host 10.0.0.5 --tasks 200
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/logging"
	"github.com/berth-cluster/berth/internal/units"
	"github.com/berth-cluster/berth/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if len(os.Args) > 1 && os.Args[1] == "executor" {
		err = executorMain(ctx, os.Args[2:])
	} else {
		err = driverMain(ctx, os.Args[1:], os.Stdout)
	}
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		// --help printed the usage: not a failure.
	case err != nil:
		fmt.Fprintln(os.Stderr, "pi:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newLogger(level string) (*slog.Logger, error) {
	return logging.New(os.Stderr, level, "text")
}

func driverMain(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pi", flag.ContinueOnError)
	tasks := fs.Int("tasks", 200, "tasks to split the sampling into")
	samples := fs.Int64("samples", 200000, "points sampled per task")
	seed := fs.Uint64("seed", 42, "seed of the job: the same seed gives the same estimate")
	maxCores := fs.Int("max-cores", 0, "most cores the app holds (0: the master's default)")
	coresPer := fs.Int("cores-per-executor", 0, "cores of each executor (0: placement decides)")
	execMem := fs.String("executor-memory", "256m", "memory of each executor (256m, 1g)")
	masters := fs.String("master", os.Getenv(wire.EnvMaster), "masters' API URLs, comma-separated (default $"+wire.EnvMaster+")")
	secret := fs.String("secret", "", "the credential to register the app with (default: the driver's, $"+wire.EnvToken+")")
	host := fs.String("host", envOr(wire.EnvWorkerHost, "127.0.0.1"), "address the task server listens on; executors must reach it (default $"+wire.EnvWorkerHost+" or 127.0.0.1)")
	taskTimeout := fs.Duration("task-timeout", 60*time.Second, "re-queue a task leased for longer than this")
	name := fs.String("name", "pi", "the app's name")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error (on stderr)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	credential, opts, err := client.FromEnv() // the driver's credential and the cluster's CA
	if err != nil {
		return err
	}
	if *secret == "" {
		*secret = credential // not a flag default: --help would print it
	}
	cfg := driverConfig{clientOpts: opts,
		masters: client.SplitMasters(*masters), secret: *secret, name: *name,
		tasks: *tasks, samples: *samples, seed: *seed,
		maxCores: *maxCores, coresPerExecutor: *coresPer,
		taskTimeout: *taskTimeout, host: *host,
	}
	switch {
	case len(cfg.masters) == 0:
		return errNoMaster
	case cfg.tasks < 1 || cfg.samples < 1:
		return errors.New("--tasks and --samples must be at least 1")
	case cfg.maxCores < 0 || cfg.coresPerExecutor < 0:
		return errors.New("--max-cores and --cores-per-executor must not be negative")
	case cfg.taskTimeout <= 0:
		return errors.New("--task-timeout must be positive")
	}
	if cfg.executorMemoryMB, err = units.ParseMemoryMB(*execMem); err != nil {
		return fmt.Errorf("--executor-memory: %w", err)
	}
	if cfg.executable, err = os.Executable(); err != nil {
		return fmt.Errorf("finding this binary for the executors: %w", err)
	}
	if cfg.executable, err = filepath.Abs(cfg.executable); err != nil {
		return err
	}
	log, err := newLogger(*logLevel)
	if err != nil {
		return err
	}
	return runDriver(ctx, cfg, stdout, log)
}

func executorMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pi executor", flag.ContinueOnError)
	driver := fs.String("driver", "", "the driver's task server URL")
	giveUp := fs.Duration("give-up", 30*time.Second, "exit once the driver has been unreachable this long")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error (on stderr)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *driver == "" {
		return errors.New("executor: --driver is required")
	}
	id, err := strconv.Atoi(os.Getenv(wire.EnvExecutorID))
	if err != nil {
		return fmt.Errorf("executor: $%s %q: want the executor id the worker sets", wire.EnvExecutorID, os.Getenv(wire.EnvExecutorID))
	}
	cores, err := strconv.Atoi(envOr(wire.EnvCores, "1"))
	if err != nil || cores < 1 {
		return fmt.Errorf("executor: $%s %q: want a positive number", wire.EnvCores, os.Getenv(wire.EnvCores))
	}
	log, err := newLogger(*logLevel)
	if err != nil {
		return err
	}
	log = log.With("executor", id)
	log.Info("executor started", "driver", *driver, "loops", cores)
	return runExecutor(ctx, executorConfig{
		driver: *driver, token: os.Getenv(tokenEnv), id: id, cores: cores, giveUp: *giveUp,
	}, log)
}
