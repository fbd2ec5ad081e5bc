package worker

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Worker is one worker daemon. New checks the configuration; Run does the
// rest.
type Worker struct {
	cfg    Config
	log    *slog.Logger
	client *httpx.Client

	epoch   atomic.Uint64 // newest master epoch seen
	sess    *session
	reports *reportQueue
	guard   *guardian // kills every child's process group if the worker dies
	// incarnation tells this process from an earlier one with the same id.
	incarnation string
	procs       *procTable
	metrics     *metrics
	cg          *cgroups // nil: limits not enforced (limits says why)
	limits      string

	// Set by Run before ready is closed, read-only afterwards.
	ready      chan struct{}
	id         string
	host       string // advertised host
	port       int
	url        string // our API base URL, as registered
	masterList string // cfg.Masters joined, for the children's env

	lastMaster string // owned by the master loop
	running    atomic.Bool
	contact    masterContact // when a master last accepted something (disconnect.go)
	// lastDiskFull is what the last heartbeat said of the disk (diskspace.go);
	// beatNow asks the master loop for a heartbeat at once.
	lastDiskFull atomic.Pointer[string]
	beatNow      chan struct{}
	// busyPorts: the ports of the range others hold (ports.go).
	busyPorts busyPorts
}

// New checks cfg (filling in its defaults) and creates the work directory.
// Errors name the cmd/worker flag at fault. Nothing listens yet.
func New(cfg Config, logger *slog.Logger) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	procs := newProcTable()
	return &Worker{
		metrics:     newMetrics(procs),
		cfg:         cfg,
		log:         logger,
		client:      httpx.NewClient(cfg.Secret, cfg.RequestTimeout).WithTLS(cfg.masterTLS()),
		sess:        newSession(),
		beatNow:     make(chan struct{}, 1),
		incarnation: rand.Text(),
		reports:     newReportQueue(),
		procs:       procs,
		ready:       make(chan struct{}),
		host:        cfg.AdvertiseHost,
		masterList:  strings.Join(cfg.Masters, ","),
	}, nil
}

// Config returns the configuration with its defaults filled in.
func (w *Worker) Config() Config { return w.cfg }

// Ready is closed once the worker listens; ID and URL are known from then.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// ID is the worker's id, "" until Ready.
func (w *Worker) ID() string { return w.onceReady(&w.id) }

// URL is the base URL of the worker's API as registered with the master
// (http://host:port), "" until Ready.
func (w *Worker) URL() string { return w.onceReady(&w.url) }

// onceReady reads a field set before Ready closes, "" until then.
func (w *Worker) onceReady(field *string) string {
	select {
	case <-w.ready:
		return *field
	default:
		return ""
	}
}

// Run listens, registers with the leading master, serves the API and runs
// what the master asks until ctx ends. Then it kills every process it
// started (SIGTERM, SIGKILL after the grace period, all at once), reports
// their final states to the master (for at most ShutdownReportTimeout) and
// returns nil. It returns an error only if it cannot listen. Run may be
// called once.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("worker: Run called twice")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(w.cfg.Host, strconv.Itoa(w.cfg.Port)))
	if err != nil {
		return fmt.Errorf("--host/--port: listening: %w", err)
	}
	w.port = ln.Addr().(*net.TCPAddr).Port
	// The cap under TLS: a connection waiting for its slot costs no handshake.
	ln = httpx.LimitListener(ln, cmp.Or(w.cfg.MaxConnections, httpx.DefaultMaxConnections()))
	w.url = w.cfg.scheme() + "://" + net.JoinHostPort(w.host, strconv.Itoa(w.port))
	if w.cfg.TLS != nil {
		ln = tls.NewListener(ln, w.cfg.TLS.ServerConfig(tls.VerifyClientCertIfGiven))
	}
	w.id = w.cfg.ID
	if w.id == "" {
		w.id = defaultID(time.Now(), w.host, w.port)
	}
	close(w.ready)

	if w.cfg.Secret == "" && w.cfg.TLS == nil {
		w.log.Warn("no secret (--secret / BERTH_SECRET): the API is unauthenticated, listening on loopback only", "host", w.cfg.Host)
	}
	if os.Geteuid() == 0 && w.cfg.runAs == nil {
		w.log.Warn("running as root without --run-as: executors and drivers run as root too, and can read the worker's credentials and each other's files; give --run-as dynamic")
	}
	w.log.Info("worker listening", "id", w.id, "address", w.url, "cores", w.cfg.Cores,
		"memoryMB", w.cfg.MemoryMB, "workDir", w.cfg.WorkDir, "masters", w.cfg.Masters)

	defer w.cfg.slot.release() // the host's slot goes with this run
	w.guard = startGuardian(w.log)
	w.setupLimits()
	defer w.cg.close()
	defer w.guard.stop()
	// Without its names' socket a worker could not see another of its
	// slot number on this host (in another --host-dir: one uid for two
	// tenants), so it does not start.
	names, err := w.serveNames(ctx)
	if err != nil {
		ln.Close()
		return err
	}
	defer names.stop() // after every process is gone (shutdown), before the slot

	srv := httpx.NewServer(httpx.Guard(w.handler(), w.cfg.Secret == "" && w.cfg.TLS == nil), w.log)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	// The reporter outlives ctx: it must deliver the final states.
	reportCtx, stopReports := context.WithCancel(context.WithoutCancel(ctx))
	defer stopReports()
	var bg sync.WaitGroup
	bg.Go(func() { w.deliverLoop(reportCtx) })
	// The master loop (heartbeats) outlives ctx while the worker drains.
	masterCtx, stopMaster := context.WithCancel(context.WithoutCancel(ctx))
	defer stopMaster()
	bg.Go(func() { w.masterLoop(masterCtx) })
	bg.Go(func() { w.cleanupLoop(ctx) })
	w.contact.touch() // out of touch counts from the start, not from 1970
	bg.Go(func() { w.stopDisconnectedLoop(masterCtx) })
	bg.Go(func() { w.diskWatchLoop(masterCtx) })
	if w.cfg.runAs != nil {
		bg.Go(func() { w.checkNamesAtStart(ctx, names) })
	}

	select {
	case <-ctx.Done():
		if w.cfg.DrainDeadline > 0 {
			w.drainBeforeStopping(w.cfg.DrainDeadline)
		}
		w.log.Info("stopping: killing every process", "grace", w.cfg.KillGrace)
	case err := <-serveErr:
		// Should not happen; stop cleanly all the same.
		w.log.Error("API server failed; stopping", "err", err)
	}
	stopMaster()
	w.shutdown(srv)
	stopReports()
	bg.Wait()
	return nil
}

// shutdown kills everything, delivers the final states (bounded) and stops
// the API server.
func (w *Worker) shutdown(srv *http.Server) {
	// Tell the master first, so it places nothing new here while the
	// children die, and finally that we are gone, so it need not wait for
	// the heartbeat timeout.
	master := w.sess.masterURL()
	w.tellMaster(master, "decommission", wire.MasterAPI.Decommission)
	defer w.tellMaster(master, "leave", wire.MasterAPI.WorkerLeft)

	killCtx, cancel := context.WithTimeout(context.Background(), w.cfg.KillGrace+5*time.Second)
	w.killAll(killCtx, reasonShutdown)
	cancel()

	if n := w.reports.len(); n > 0 {
		t := time.NewTimer(w.cfg.ShutdownReportTimeout)
		select {
		case <-w.reports.drained():
			t.Stop()
			w.log.Info("final states reported to the master", "reports", n)
		case <-t.C:
			w.log.Warn("could not report every final state to the master", "left", w.reports.len())
		}
	}

	shutCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close() // a slow log download must not hold the exit
	}
	w.log.Info("worker stopped", "id", w.id)
}

// tellMaster posts a lifecycle notice (decommission, leave) to the master;
// best effort and brief: the heartbeat timeout covers a master that does
// not hear it.
func (w *Worker) tellMaster(master, what string, notice wire.Route[wire.None, wire.None]) {
	if master == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := httpx.Call(ctx, w.client, master, notice, wire.None{}, w.id); err != nil {
		w.log.Warn("could not tell the master", "notice", what, "master", master, "err", err)
		return
	}
	w.log.Info("told the master", "notice", what, "master", master)
}

// procLog is the logger for one process.
func (w *Worker) procLog(p *proc) *slog.Logger {
	if p.kind == kindExecutor {
		return w.log.With("app", p.appID, "executor", p.execID)
	}
	return w.log.With("driver", p.driverID)
}
