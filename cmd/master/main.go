// Command master runs a berth master.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/logging"
	"github.com/berth-cluster/berth/master"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/placement"
)

func main() {
	app := &cli.App{
		Name:  "master",
		Usage: "run a berth master",
		Description: "The master registers workers, applications and drivers, keeps them durable, expires\n" +
			"workers that stop heartbeating and schedules drivers and executors.\n" +
			"Every flag can also be set through the environment variable shown with it.",
		Flags:           flags(),
		Action:          run,
		HideHelpCommand: true,
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "master:", err)
		os.Exit(1)
	}
}

func env(name string) []string { return []string{"BERTH_MASTER_" + name} }

func run(cx *cli.Context) error {
	if cx.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; see --help)", cx.Args().First())
	}
	log, err := logging.New(os.Stderr, cx.String("log-level"), cx.String("log-format"))
	if err != nil {
		return fmt.Errorf("--log-level/--log-format: %w", err)
	}
	cfg, err := configFromFlags(cx)
	if err != nil {
		return err
	}
	host, secret := cx.String("host"), cx.String("secret")
	if err := httpx.CheckBind(host, secret, "--host"); err != nil {
		return err
	}
	if secret == "" {
		log.Warn("no --secret set: the API is unauthenticated, so it listens on loopback only")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cx.Int("port"))))
	if err != nil {
		return fmt.Errorf("--host/--port: %w", err)
	}
	if cfg.Advertise == "" {
		cfg.Advertise = "http://" + ln.Addr().String()
	}
	if cfg.ID == "" {
		cfg.ID = "master-" + ln.Addr().String()
	}
	engine, agent, err := openEngine(cx, cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer engine.Close()
	m, err := master.New(cfg, engine, agent, log, nil)
	if err != nil {
		ln.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return m.Run(ctx, ln)
}

func configFromFlags(cx *cli.Context) (master.Config, error) {
	cfg := master.Config{
		ID:                 cx.String("node-id"),
		Advertise:          cx.String("advertise"),
		Secret:             cx.String("secret"),
		WorkerTimeout:      cx.Duration("worker-timeout"),
		AppTimeout:         cx.Duration("app-timeout"),
		RecoveryTimeout:    cx.Duration("recovery-timeout"),
		DefaultCores:       cx.Int("default-cores"),
		Placement:          cx.String("placement"),
		WorkerOrder:        cx.String("worker-order"),
		MinCoreUnit:        cx.Int("min-core-unit"),
		MaxExecutorRetries: cx.Int("max-executor-retries"),
		RetainedApps:       cx.Int("retained-apps"),
		RetainedDrivers:    cx.Int("retained-drivers"),
	}
	if cfg.WorkerTimeout <= 0 {
		return cfg, fmt.Errorf("--worker-timeout %s: must be positive", cfg.WorkerTimeout)
	}
	for _, d := range []struct {
		flag string
		v    int
	}{{"--default-cores", cfg.DefaultCores}, {"--min-core-unit", cfg.MinCoreUnit}, {"--retained-apps", cfg.RetainedApps}, {"--retained-drivers", cfg.RetainedDrivers}} {
		if d.v < 0 {
			return cfg, fmt.Errorf("%s %d: must not be negative", d.flag, d.v)
		}
	}
	if cx.Duration("app-timeout") < 0 || cx.Duration("recovery-timeout") < 0 {
		return cfg, errors.New("--app-timeout and --recovery-timeout must not be negative")
	}
	if _, err := placement.New(cfg.Placement, placement.Options{}); err != nil {
		return cfg, fmt.Errorf("--placement: %w", err)
	}
	if _, err := placement.New("spread", placement.Options{Order: cfg.WorkerOrder}); err != nil {
		return cfg, fmt.Errorf("--worker-order: %w", err)
	}
	return cfg, nil
}

// openEngine opens the persistence engine and the election agent of the
// chosen recovery mode.
func openEngine(cx *cli.Context, cfg master.Config, log *slog.Logger) (persistence.Engine, election.Agent, error) {
	switch mode := cx.String("recovery-mode"); mode {
	case "none":
		return persistence.NewMemory(), election.NewSingle(cfg.ID), nil
	case "bolt":
		dir := cx.String("data-dir")
		if dir == "" {
			return nil, nil, errors.New("--data-dir is required with --recovery-mode bolt (or use --recovery-mode none)")
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("--data-dir: %w", err)
		}
		engine, err := persistence.OpenBolt(filepath.Join(dir, "state.db"))
		if err != nil {
			return nil, nil, fmt.Errorf("--data-dir: %w", err)
		}
		return engine, election.NewSingle(cfg.ID), nil
	default:
		return nil, nil, fmt.Errorf("--recovery-mode %q: want bolt or none", mode)
	}
}

func flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "host", Value: "127.0.0.1", EnvVars: env("HOST"), Usage: "address to listen on; without --secret only loopback addresses are allowed"},
		&cli.IntFlag{Name: "port", Value: 7077, EnvVars: env("PORT"), Usage: "API port (0 picks a free one)"},
		&cli.StringFlag{Name: "advertise", EnvVars: env("ADVERTISE"), Usage: "API URL workers and clients use to reach this master (default http://<host>:<port>)"},
		&cli.StringFlag{Name: "data-dir", EnvVars: env("DATA_DIR"), Usage: "directory for the master's durable state"},
		&cli.StringFlag{Name: "secret", EnvVars: []string{"BERTH_SECRET"}, Usage: "shared secret every daemon and client must present (Authorization: Bearer)"},
		&cli.StringFlag{Name: "node-id", EnvVars: env("NODE_ID"), Usage: "this master's id (default master-<host>:<port>)"},
		&cli.StringFlag{Name: "recovery-mode", Value: "bolt", EnvVars: env("RECOVERY_MODE"), Usage: "bolt: state in --data-dir, survives restarts; none: memory only"},
		&cli.DurationFlag{Name: "worker-timeout", Value: master.DefaultWorkerTimeout, EnvVars: env("WORKER_TIMEOUT"), Usage: "a worker silent this long is DEAD; workers heartbeat every quarter of it"},
		&cli.DurationFlag{Name: "app-timeout", EnvVars: env("APP_TIMEOUT"), Usage: "an app whose client is gone this long is finished (default: --worker-timeout)"},
		&cli.DurationFlag{Name: "recovery-timeout", EnvVars: env("RECOVERY_TIMEOUT"), Usage: "how long a new leader waits for workers and apps to answer (default: --worker-timeout)"},
		&cli.IntFlag{Name: "default-cores", EnvVars: env("DEFAULT_CORES"), Usage: "max cores of an app that does not set maxCores (0: unlimited)"},
		&cli.StringFlag{Name: "placement", Value: "spread", EnvVars: env("PLACEMENT"), Usage: "executor placement policy: spread, pack or bestfit"},
		&cli.StringFlag{Name: "worker-order", Value: placement.OrderCoresFreeDesc, EnvVars: env("WORKER_ORDER"), Usage: "worker order: cores-free-desc, cores-free-asc, memory-free-desc, memory-free-asc or worker-id"},
		&cli.IntFlag{Name: "min-core-unit", Value: 1, EnvVars: env("MIN_CORE_UNIT"), Usage: "cores per placement step for apps without coresPerExecutor (1: Spark)"},
		&cli.IntFlag{Name: "max-executor-retries", Value: master.DefaultMaxExecutorRetries, EnvVars: env("MAX_EXECUTOR_RETRIES"), Usage: "executor failures in a row, with none running, that fail an app (-1: never)"},
		&cli.IntFlag{Name: "retained-apps", Value: master.DefaultRetained, EnvVars: env("RETAINED_APPS"), Usage: "finished apps kept for status"},
		&cli.IntFlag{Name: "retained-drivers", Value: master.DefaultRetained, EnvVars: env("RETAINED_DRIVERS"), Usage: "finished drivers kept for status"},
		&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: env("LOG_LEVEL"), Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: env("LOG_FORMAT"), Usage: "text or json"},
	}
}
