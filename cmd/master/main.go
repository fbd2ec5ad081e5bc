// Command master runs a berth master.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/internal/config"
	"github.com/berth-cluster/berth/internal/credentials"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/logging"
	"github.com/berth-cluster/berth/internal/version"
	"github.com/berth-cluster/berth/master"
	"github.com/berth-cluster/berth/membership"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/placement"
	_ "github.com/berth-cluster/berth/placement/gpushare" // registers the GPU-sharing policies (fgd, frag-fit...)
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

func main() {
	app := &cli.App{
		Name:  "master",
		Usage: "run a berth master",
		Description: "The master registers workers, applications and drivers, keeps them durable, expires\n" +
			"workers that stop heartbeating and schedules drivers and executors.\n" +
			"Every flag can also be set through the environment variable shown with it, or in the\n" +
			"file --config names, under its own name (worker-timeout = \"60s\"): the command line\n" +
			"beats the environment, which beats the file, which beats the default.",
		Flags:           flags(),
		Action:          run,
		HideHelpCommand: true,
		// A bad flag is one line on stderr, "master: ...", as the worker's
		// and berth's, not urfave's "Incorrect Usage:" and the whole help.
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return err },
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "master:", err)
		os.Exit(1)
	}
}

func env(name string) []string { return []string{"BERTH_MASTER_" + name} }

// run answers --version and --print-config, or loads the --config file
// below the flags and the environment and serves.
func run(cx *cli.Context) error {
	if cx.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; see --help)", cx.Args().First())
	}
	if shown, err := version.Printed(cx); shown {
		return err
	}
	src, err := config.Load(cx, os.Args)
	if err != nil {
		return err
	}
	if cx.Bool("print-config") {
		return src.Print(cx.App.Writer, cx)
	}
	if cx.Bool("recover") {
		log, err := logging.New(os.Stderr, cx.String("log-level"), cx.String("log-format"))
		if err != nil {
			return fmt.Errorf("--log-level/--log-format: %w", err)
		}
		return src.Annotate(recoverData(cx, log))
	}
	// A value the file gave and the master refuses is named with its
	// file, line and key.
	return src.Annotate(serve(cx))
}

func serve(cx *cli.Context) error {
	log, err := logging.New(os.Stderr, cx.String("log-level"), cx.String("log-format"))
	if err != nil {
		return fmt.Errorf("--log-level/--log-format: %w", err)
	}
	cfg, err := configFromFlags(cx)
	if err != nil {
		return err
	}
	creds, err := credentials.FromFlags(cx, security.RoleMaster)
	if err != nil {
		return err
	}
	cfg.Secret, cfg.TLS = creds.Secret, creds.TLS
	host := cx.String("host")
	if err := httpx.CheckBind(host, !creds.Loopback(), "--host"); err != nil {
		return err
	}
	if creds.Loopback() {
		log.Warn("no credentials (--tls-*-file, --secret-file): the API is unauthenticated, so it listens on loopback only")
	}
	// The settings first, as they will be once listening: a bad
	// placement was reported as a port in use when one was.
	probe := cfg
	probe.Advertise = cmp.Or(probe.Advertise, creds.Scheme()+"://"+net.JoinHostPort(cmp.Or(cx.String("advertise-host"), host), strconv.Itoa(max(cx.Int("port"), 1))))
	probe.ID = cmp.Or(probe.ID, "master-probe")
	if _, err := probe.WithDefaults(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cx.Int("port"))))
	if err != nil {
		return fmt.Errorf("--host/--port: %w", err)
	}
	if cfg.Advertise == "" {
		// --advertise-host, as the worker's: the host others call it by,
		// with this master's scheme and port.
		advertised := ln.Addr().String()
		if h := cx.String("advertise-host"); h != "" {
			advertised = net.JoinHostPort(h, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
		}
		cfg.Advertise = creds.Scheme() + "://" + advertised
	} else if cx.IsSet("advertise-host") {
		return errors.New("--advertise-host with --advertise: give one (--advertise is the whole URL, --advertise-host its host only)")
	}
	// The cap under TLS: a connection waiting for its slot costs no handshake.
	ln = creds.Listen(httpx.LimitListener(ln, cmp.Or(cx.Int("max-connections"), httpx.DefaultMaxConnections())))
	if cfg.ID == "" {
		cfg.ID = "master-" + ln.Addr().String()
	}
	// The flags are checked before any state is opened: a bad one writes
	// nothing.
	if cfg, err = cfg.WithDefaults(); err != nil {
		ln.Close()
		return err
	}
	engine, raft, agent, err := openEngine(cx, cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer engine.Close()
	var repl master.Replication
	if raft != nil {
		repl = raft
	}
	m, err := master.New(cfg, engine, repl, agent, log, nil)
	if err != nil {
		ln.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if r := raft; r != nil {
		// A log entry this master cannot read stops it (see persistence's
		// fsm): it exits with that error rather than drift from the others.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		go func() {
			select {
			case err := <-r.Fatal():
				cancel(err)
			case <-ctx.Done():
			}
		}()
		// Announce logs its progress; it returns an error only once ctx ends.
		go membership.Announce(ctx, r, membership.Config{
			Self:   wire.JoinRequest{ID: cfg.ID, RaftAddr: r.Addr(), APIAddr: cfg.Advertise},
			Join:   client.SplitMasters(cx.String("join")),
			Secret: creds.Secret,
			TLS:    creds.ClientTLS(security.RoleMaster),
			Logger: log,
		})
	}
	err = m.Run(ctx, ln)
	if cause := context.Cause(ctx); errors.Is(cause, persistence.ErrUnreadableEntry) {
		return cause
	}
	return err
}

// configFromFlags hands the flags to a master.Config, which checks them
// (master.Config.WithDefaults), naming them.
func configFromFlags(cx *cli.Context) (master.Config, error) {
	cfg := master.Config{
		ID:                       cx.String("node-id"),
		Advertise:                cx.String("advertise"),
		WorkerTimeout:            cx.Duration("worker-timeout"),
		AppTimeout:               cx.Duration("app-timeout"),
		RecoveryTimeout:          cx.Duration("recovery-timeout"),
		DefaultCores:             cx.Int("default-cores"),
		Placement:                cx.String("placement"),
		WorkerOrder:              cx.String("worker-order"),
		MinCoreUnit:              cx.Int("min-core-unit"),
		MaxExecutorRetries:       cx.Int("max-executor-retries"),
		RetainedApps:             cx.Int("retained-apps"),
		RetainedDrivers:          cx.Int("retained-drivers"),
		MaxActiveApps:            cx.Int("max-active-apps"),
		MaxActiveDrivers:         cx.Int("max-active-drivers"),
		MaxSubmissionBytes:       cx.Int("max-submission-bytes"),
		MaxStreamsPerApp:         cx.Int("max-streams-per-app"),
		MaxTenantWritesPerSecond: cx.Int("max-tenant-writes-per-second"),
		MaxDrivers:               cx.Int("max-drivers"),
		PreemptionDelay:          cx.Duration("preemption-delay"),
		PreemptionGrace:          cx.Duration("preemption-grace"),
		ExcludeDuration:          cx.Duration("exclude-duration"),
		GangReserveAfter:         cx.Duration("gang-reserve-after"),
		AuditRetention:           cx.Duration("audit-retention"),
		MaxHeartbeatsPerSecond:   cx.Int("max-heartbeats-per-second"),
	}
	// The listener is not the master's: its cap is checked here, where it
	// is used.
	if n := cx.Int("max-connections"); n < 0 {
		return cfg, fmt.Errorf("--max-connections %d is negative", n)
	}
	return cfg, nil
}

// openEngine opens the persistence engine and the election agent of the
// chosen recovery mode.
// openEngine opens the engine --recovery-mode names; with Raft, it is
// also returned as itself, for what only a replicated engine does.
func openEngine(cx *cli.Context, cfg master.Config, log *slog.Logger) (persistence.Engine, *persistence.Raft, election.Agent, error) {
	mode := recoveryMode(cx)
	dir := cx.String("data-dir")
	warnUnusedState(dir, mode, log)
	if mode != "none" {
		if dir == "" {
			return nil, nil, nil, fmt.Errorf("--data-dir is required with --recovery-mode %s (or use --recovery-mode none)", mode)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, nil, fmt.Errorf("--data-dir: %w", err)
		}
	}
	switch mode {
	case "none":
		return persistence.NewMemory(), nil, election.NewSingle(cfg.ID), nil
	case "bolt":
		engine, err := persistence.OpenBolt(filepath.Join(dir, "state.db"))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--data-dir: %w", err)
		}
		return engine, nil, election.NewSingle(cfg.ID), nil
	case "raft":
		peers, err := parsePeers(cx.String("peers"))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--peers: %w", err)
		}
		raftAddr := cx.String("raft-addr")
		if raftAddr == "" {
			raftAddr = peers[cfg.ID]
		}
		if _, _, err := httpx.SplitHostPort(raftAddr); err != nil {
			return nil, nil, nil, fmt.Errorf("--raft-addr %q: %w (give --raft-addr, or list this --node-id in --peers)", raftAddr, err)
		}
		if len(peers) > 0 {
			if addr, ok := peers[cfg.ID]; !ok {
				return nil, nil, nil, fmt.Errorf("--peers does not list this master's --node-id %q", cfg.ID)
			} else if addr != raftAddr {
				return nil, nil, nil, fmt.Errorf("--raft-addr %s differs from this master's address in --peers (%s)", raftAddr, addr)
			}
		}
		if d := cx.Duration("raft-snapshot-interval"); d <= 0 {
			return nil, nil, nil, fmt.Errorf("--raft-snapshot-interval %s: must be positive", d)
		}
		if m := cx.Int("raft-multiplier"); m < 1 || m > 10 {
			return nil, nil, nil, fmt.Errorf("--raft-multiplier %d: want 1 to 10", m)
		}
		if p := cx.String("raft-profile"); !slices.Contains(persistence.RaftProfiles(), p) {
			return nil, nil, nil, fmt.Errorf("--raft-profile %q: want %s", p, strings.Join(persistence.RaftProfiles(), " or "))
		}
		if cfg.TLS == nil {
			// Even on loopback: any local process could otherwise speak
			// Raft to this master and rewrite the cluster's state.
			return nil, nil, nil, fmt.Errorf("%s needs --tls-ca-file, --tls-cert-file and --tls-key-file, a master certificate (berth tls cert create --role master --name %s --host HOST): Raft runs only over mutual TLS between master certificates (see berth tls --help)",
				raftFlagGiven(cx), cmp.Or(cfg.ID, "ID"))
		}
		engine, err := persistence.OpenRaft(persistence.RaftConfig{
			ID: cfg.ID, Addr: raftAddr, Dir: filepath.Join(dir, "raft"), Peers: peers,
			Multiplier:        cx.Int("raft-multiplier"),
			Profile:           cx.String("raft-profile"),
			SnapshotThreshold: uint64(cx.Int("raft-snapshot-threshold")),
			TrailingLogs:      uint64(cx.Int("raft-trailing-logs")),
			SnapshotInterval:  cx.Duration("raft-snapshot-interval"),
			TLS:               cfg.TLS,
			Logger:            log,
		})
		if err != nil {
			return nil, nil, nil, err
		}
		return engine, engine, election.NewRaft(engine, log), nil
	default:
		return nil, nil, nil, fmt.Errorf("--recovery-mode %q: want raft, bolt or none", mode)
	}
}

// raftFlagGiven names the flag that made this master run Raft, for its
// refusals: the one the user gave.
func raftFlagGiven(cx *cli.Context) string {
	for _, f := range []string{"join", "peers", "raft-addr"} {
		if cx.String(f) != "" {
			return "--" + f
		}
	}
	return "--recovery-mode raft"
}

// recoveryMode is --recovery-mode, or raft when any Raft flag is given and
// bolt otherwise.
func recoveryMode(cx *cli.Context) string {
	if mode := cx.String("recovery-mode"); mode != "" {
		return mode
	}
	if cx.String("peers") != "" || cx.String("raft-addr") != "" || cx.String("join") != "" {
		return "raft"
	}
	return "bolt"
}

// parsePeers reads "m1=127.0.0.1:7177,m2=127.0.0.1:7178".
func parsePeers(s string) (map[string]string, error) {
	peers := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return peers, nil
	}
	for _, item := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("%q is not id=host:port", item)
		}
		if _, _, err := httpx.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("master %q listed twice", id)
		}
		peers[id] = addr
	}
	return peers, nil
}

func flags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "host", Value: "127.0.0.1", EnvVars: env("HOST"), Usage: "address to listen on; without --secret only loopback addresses are allowed"},
		&cli.IntFlag{Name: "port", Value: 7077, EnvVars: env("PORT"), Usage: "API port (0 picks a free one)"},
		&cli.StringFlag{Name: "advertise-host", EnvVars: env("ADVERTISE_HOST"), Usage: "host workers and clients use to reach this master, as the worker's --advertise-host (default --host); its scheme and port are the master's"},
		&cli.StringFlag{Name: "advertise", EnvVars: env("ADVERTISE"), Usage: "the whole API URL workers and clients use to reach this master, when --advertise-host is not enough (default https or http://<advertise-host>:<port>)"},
		&cli.StringFlag{Name: "data-dir", EnvVars: env("DATA_DIR"), Usage: "directory for the master's durable state"},
		&cli.StringFlag{Name: "secret", EnvVars: []string{"BERTH_SECRET"}, Usage: "operator secret (Authorization: Bearer); prefer --secret-file: argv and environments are visible"},
		&cli.StringFlag{Name: "node-id", EnvVars: env("NODE_ID"), Usage: "this master's id (default master-<host>:<port>)"},
		&cli.StringFlag{Name: "recovery-mode", EnvVars: env("RECOVERY_MODE"), Usage: "raft: state replicated over the masters in --peers; bolt: one master, state in --data-dir; none: memory only (default: raft if --peers, --raft-addr or --join is given, else bolt)"},
		&cli.StringFlag{Name: "raft-addr", EnvVars: env("RAFT_ADDR"), Usage: "host:port for Raft traffic between masters (default: this --node-id's address in --peers)"},
		&cli.StringFlag{Name: "peers", EnvVars: env("PEERS"), Usage: "every master of a new cluster as id=host:port of its Raft address, comma-separated; the cluster bootstraps from it once"},
		&cli.StringFlag{Name: "join", EnvVars: env("JOIN"), Usage: "API URLs of masters of a running cluster to join (comma-separated), instead of --peers"},
		recoverFlag(),
		&cli.StringFlag{Name: "raft-profile", Value: persistence.RaftProfileDefault, EnvVars: env("RAFT_PROFILE"), Usage: "Raft timeouts: default (hashicorp/raft's, 1 s heartbeat and election timeouts: safe on a slow or WAN-ish network) or lan (200 ms and 100 ms lease: masters on one LAN, failover in well under a second; docs/HA.md)"},
		&cli.IntFlag{Name: "raft-multiplier", Value: 1, EnvVars: env("RAFT_MULTIPLIER"), Usage: "scales Raft's timeouts, 1-10 (1: 1 s heartbeat and election timeouts, failover in about 1-2 s)"},
		&cli.IntFlag{Name: "raft-snapshot-threshold", Value: 8192, EnvVars: env("RAFT_SNAPSHOT_THRESHOLD"), Usage: "log entries between Raft snapshots"},
		&cli.DurationFlag{Name: "raft-snapshot-interval", Value: 120 * time.Second, EnvVars: env("RAFT_SNAPSHOT_INTERVAL"), Usage: "how often Raft checks whether --raft-snapshot-threshold entries have accumulated (it waits a random 1-2 intervals)"},
		&cli.IntFlag{Name: "raft-trailing-logs", Value: 10240, EnvVars: env("RAFT_TRAILING_LOGS"), Usage: "log entries kept after a snapshot (a follower further behind gets the snapshot)"},
		&cli.DurationFlag{Name: "worker-timeout", Value: master.DefaultWorkerTimeout, EnvVars: env("WORKER_TIMEOUT"), Usage: "a worker silent this long is DEAD; workers heartbeat every quarter of it (0: the default)"},
		&cli.DurationFlag{Name: "app-timeout", EnvVars: env("APP_TIMEOUT"), Usage: "an app whose client is gone this long is finished (default: --worker-timeout)"},
		&cli.DurationFlag{Name: "recovery-timeout", EnvVars: env("RECOVERY_TIMEOUT"), Usage: "how long a new leader waits for workers and apps to answer (default: --worker-timeout)"},
		&cli.IntFlag{Name: "default-cores", EnvVars: env("DEFAULT_CORES"), Usage: "max cores of an app that does not set maxCores (0: unlimited)"},
		&cli.StringFlag{Name: "placement", Value: "spread", EnvVars: env("PLACEMENT"), Usage: "executor placement policy: " + strings.Join(placement.Names(), ", ")},
		&cli.StringFlag{Name: "worker-order", Value: placement.OrderCoresFreeDesc, EnvVars: env("WORKER_ORDER"), Usage: "worker order: cores-free-desc, cores-free-asc, memory-free-desc, memory-free-asc or worker-id"},
		&cli.IntFlag{Name: "min-core-unit", Value: 1, EnvVars: env("MIN_CORE_UNIT"), Usage: "cores per placement step for apps without coresPerExecutor (1: Spark)"},
		&cli.IntFlag{Name: "max-executor-retries", Value: master.DefaultMaxExecutorRetries, EnvVars: env("MAX_EXECUTOR_RETRIES"), Usage: "executor failures in a row, with none running, that fail an app (-1: never; 0 means the default)"},
		&cli.IntFlag{Name: "retained-apps", Value: master.DefaultRetained, EnvVars: env("RETAINED_APPS"), Usage: "finished apps kept for status"},
		&cli.IntFlag{Name: "retained-drivers", Value: master.DefaultRetained, EnvVars: env("RETAINED_DRIVERS"), Usage: "finished drivers kept for status"},
		&cli.IntFlag{Name: "max-heartbeats-per-second", Value: master.DefaultMaxHeartbeatsPerSecond, EnvVars: env("MAX_HEARTBEATS_PER_SECOND"), Usage: "the heartbeat rate the master aims at: workers heartbeat every --worker-timeout/4, or less often in a fleet large enough to exceed this rate, but at least every --worker-timeout/3"},
		&cli.DurationFlag{Name: "preemption-delay", Value: master.DefaultPreemptionDelay, EnvVars: env("PREEMPTION_DELAY"), Usage: "how long a queue owed capacity (below its guarantee or fair share) waits before the master takes it back from queues above theirs (docs/QUEUES.md)"},
		&cli.DurationFlag{Name: "preemption-grace", Value: master.DefaultPreemptionGrace, EnvVars: env("PREEMPTION_GRACE"), Usage: "time between a preempted executor's SIGTERM and its SIGKILL"},
		&cli.DurationFlag{Name: "gang-reserve-after", Value: master.DefaultGangReserveAfter, EnvVars: env("GANG_RESERVE_AFTER"), Usage: "how long a gang (an app's \"gang\": N executors started together) waits to be placed whole before the apps behind it are held back so that capacity freed goes to it (docs/PLACEMENT.md)"},
		&cli.DurationFlag{Name: "exclude-duration", Value: master.DefaultExcludeDuration, EnvVars: env("EXCLUDE_DURATION"), Usage: "how long an app's executors are kept off a worker where two of them failed within ten minutes (docs/HEALTH.md)"},
		&cli.DurationFlag{Name: "audit-retention", Value: master.DefaultAuditRetention, EnvVars: env("AUDIT_RETENTION"), Usage: "how long the audit log keeps an entry (at most 100,000 entries are kept whatever this says)"},
		&cli.IntFlag{Name: "max-drivers", EnvVars: env("MAX_DRIVERS"), Usage: "drivers running at once; more wait SUBMITTED, so drivers cannot take every core from their own apps (Spark's spark.deploy.maxDrivers; 0: no bound)"},
		&cli.IntFlag{Name: "max-active-apps", Value: master.DefaultMaxActiveApps, EnvVars: env("MAX_ACTIVE_APPS"), Usage: "apps registered and not ended; one more gets 429"},
		&cli.IntFlag{Name: "max-active-drivers", Value: master.DefaultMaxActiveDrivers, EnvVars: env("MAX_ACTIVE_DRIVERS"), Usage: "drivers submitted and not ended; one more gets 429"},
		&cli.IntFlag{Name: "max-submission-bytes", Value: master.DefaultMaxSubmissionBytes, EnvVars: env("MAX_SUBMISSION_BYTES"), Usage: "bytes of a submission's command, environment and exec checks; more gets 429"},
		&cli.IntFlag{Name: "max-streams-per-app", Value: master.DefaultMaxStreamsPerApp, EnvVars: env("MAX_STREAMS_PER_APP"), Usage: "event streams open on one app; one more gets 429"},
		&cli.IntFlag{Name: "max-tenant-writes-per-second", Value: master.DefaultMaxTenantWritesPerSecond, EnvVars: env("MAX_TENANT_WRITES_PER_SECOND"), Usage: "changes one tenant (with its drivers) may make a second, 10 s of them in a burst; one more gets 429: each is an audit entry, and the log keeps the newest 100,000"},
		&cli.IntFlag{Name: "max-connections", EnvVars: env("MAX_CONNECTIONS"), Usage: "open API connections; at the cap a new one closes the oldest idle one, or, if all are serving requests, takes one of a few reserve connections that answer only /healthz and /readyz (503 otherwise); beyond those, more wait to be accepted (0: three quarters of the file descriptor limit)"},
		&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: env("LOG_LEVEL"), Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: env("LOG_FORMAT"), Usage: "text or json"},
	}, append(credentials.Flags(),
		config.Flag("BERTH_MASTER_CONFIG"),
		config.PrintFlag(),
		version.Flag(),
	)...)
}
