// Package load is berthbench's measures of one real master under load:
// many simulated workers in this process speak the real HTTP protocol to it.
//
//	berthbench heartbeats   --master-bin bin/master --workers 1000,5000,10000
//	berthbench worker-loss  --master-bin bin/master --workers 100 --repeat 20
//	berthbench launches     --master-bin bin/master --workers 50 --apps 200
//
// With --master-bin it starts the master itself (on 127.0.0.1, a free port,
// its log in the work directory) and stops it by pid at the end; with
// --master URL it measures a master someone else runs.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// fleetDescription ends the description of every subcommand: what the
// simulated workers do, and how a run ends.
const fleetDescription = `The simulated workers: N of them run in this process. They share one HTTP
server on 127.0.0.1; worker n registers as 127.0.0.1:<port-base+n> with the
address http://127.0.0.1:PORT/w/n, where the master sends its commands. Each
registers, sends its (empty) latest state, heartbeats every interval the master
asks for (at a random phase), fences commands by epoch (409 when stale), and
answers a launch with 200 and then a RUNNING report; a kill or an
ApplicationFinished with KILLED reports. A re-registration the master asks for
(Reconnect=true, or 404 on a heartbeat) of a worker the tool did not kill is a
false expiry.

Every loop is bounded by count and time; the master the tool started is
stopped with SIGTERM (by pid) at the end, and its log is scanned for warnings,
errors and panics.`

// describe is a subcommand's own description followed by the fleet's.
func describe(own string) string { return own + "\n\n" + fleetDescription }

// Commands are berthbench's subcommands of this package, in the order of
// its help.
func Commands(stdout io.Writer) []*cli.Command {
	return []*cli.Command{heartbeatsCommand(stdout), workerLossCommand(stdout), launchesCommand(stdout)}
}

// common is what every scenario takes.
type common struct {
	out          io.Writer
	masterBin    string
	masterURL    string
	secret       string
	recoveryMode string
	masterArgs   []string
	workDir      string
	keepWorkDir  bool
	inFlight     int
	reqTimeout   time.Duration
	jsonPath     string
	csvPath      string
	seed         uint64
	idPrefix     string
	portBase     int
	maxTime      time.Duration
	// host kills, at the end of the run, any master this tool started that
	// still runs (after an error, say).
	host *testcluster.CommandHost
}

func commonFlags() []cli.Flag {
	return []cli.Flag{
		// BERTHLOAD_MASTER_BIN: the name it had when these measures were berthload's.
		&cli.StringFlag{Name: "master-bin", EnvVars: []string{"BERTHBENCH_MASTER_BIN", "BERTHLOAD_MASTER_BIN"}, Usage: "master binary to start (on 127.0.0.1, a free port)"},
		&cli.StringFlag{Name: "master", Usage: "URL of a running master to measure instead (its flags are its own)"},
		&cli.StringFlag{Name: "secret", EnvVars: []string{"BERTH_SECRET"}, Usage: "cluster secret (given to the master started, used on every request)"},
		&cli.StringFlag{Name: "recovery-mode", Value: "bolt", Usage: "recovery mode of the master started: bolt (state in the work directory) or none"},
		&cli.StringSliceFlag{Name: "master-arg", Usage: "extra flag for the master started, e.g. --master-arg=--placement=pack (repeatable)"},
		&cli.StringFlag{Name: "work-dir", Usage: "directory for the master's log and data (default: a temporary one, removed at the end)"},
		&cli.BoolFlag{Name: "keep-work-dir", Usage: "keep the temporary work directory (master logs) at the end"},
		&cli.IntFlag{Name: "max-in-flight", Value: 256, Usage: "requests to the master in flight at once (also the idle connections kept)"},
		&cli.DurationFlag{Name: "request-timeout", Value: 10 * time.Second, Usage: "timeout of one request to the master"},
		&cli.StringFlag{Name: "json", Usage: "write the whole report as JSON to this file"},
		&cli.StringFlag{Name: "csv", Usage: "write the result table as CSV to this file (other tables next to it)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the heartbeat phases and of the choices of victims"},
		&cli.StringFlag{Name: "id-prefix", Value: "sim", Usage: "worker ids are <prefix>-<n>"},
		&cli.IntFlag{Name: "port-base", Value: 20000, Usage: "worker n registers port <port-base>+n (only an identity: nothing listens there)"},
		&cli.DurationFlag{Name: "max-time", Value: 15 * time.Minute, Usage: "hard bound on the whole run"},
	}
}

func readCommon(c *cli.Context, out io.Writer) (*common, error) {
	if c.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (flags only)", c.Args().Slice())
	}
	cm := &common{
		out: out, masterBin: c.String("master-bin"), masterURL: strings.TrimSuffix(c.String("master"), "/"),
		secret: c.String("secret"), recoveryMode: c.String("recovery-mode"), masterArgs: c.StringSlice("master-arg"),
		workDir: c.String("work-dir"), keepWorkDir: c.Bool("keep-work-dir"),
		inFlight: c.Int("max-in-flight"), reqTimeout: c.Duration("request-timeout"),
		jsonPath: c.String("json"), csvPath: c.String("csv"), seed: c.Uint64("seed"),
		idPrefix: c.String("id-prefix"), portBase: c.Int("port-base"), maxTime: c.Duration("max-time"),
	}
	switch {
	case cm.masterBin == "" && cm.masterURL == "":
		return nil, errors.New("give --master-bin (start a master) or --master (use a running one)")
	case cm.masterBin != "" && cm.masterURL != "":
		return nil, errors.New("--master-bin and --master are exclusive")
	}
	if cm.recoveryMode != "bolt" && cm.recoveryMode != "none" {
		return nil, fmt.Errorf("--recovery-mode %q: want bolt or none", cm.recoveryMode)
	}
	if cm.inFlight < 1 || cm.reqTimeout <= 0 || cm.maxTime <= 0 {
		return nil, errors.New("--max-in-flight, --request-timeout and --max-time must be positive")
	}
	if cm.masterBin != "" {
		abs, err := filepath.Abs(cm.masterBin)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("--master-bin: %w", err)
		}
		cm.masterBin = abs
	}
	return cm, nil
}

// target is the master one step of a scenario measures.
type target struct {
	URL  string
	proc *masterProc // nil when not started by this tool
	Info MasterInfo
}

// openMaster starts a master (--master-bin) or checks the one at --master.
// openReported opens the scenario's master, records and prints which master
// it is, and returns a client for it: the start every scenario shares but
// heartbeats, which reports per cluster size.
func (cm *common) openReported(ctx context.Context, r *Report, name string, workerTimeout time.Duration, minCoreUnit int) (*target, *masterClient, error) {
	tgt, err := cm.openMaster(ctx, name, workerTimeout, minCoreUnit)
	if err != nil {
		return nil, nil, err
	}
	r.Masters = append(r.Masters, tgt.Info)
	printMaster(cm.out, tgt.Info)
	r.Problems = append(r.Problems, tgt.warnings()...)
	return tgt, newMasterClient(tgt.URL, cm.secret, cm.inFlight, cm.reqTimeout), nil
}

func (cm *common) openMaster(ctx context.Context, name string, workerTimeout time.Duration, minCoreUnit int) (*target, error) {
	if cm.masterURL != "" {
		mc := newMasterClient(cm.masterURL, cm.secret, 1, cm.reqTimeout)
		cs, err := mc.cluster(ctx)
		if err != nil {
			return nil, fmt.Errorf("--master %s: %w", cm.masterURL, err)
		}
		alive := 0
		for _, w := range cs.Workers {
			if w.State == wire.WorkerAlive {
				alive++
			}
		}
		return &target{URL: cm.masterURL, Info: MasterInfo{URL: cm.masterURL, MasterID: cs.MasterID, Epoch: cs.Epoch, OtherWorkers: alive}}, nil
	}
	p, err := startMaster(ctx, cm.host, masterOpts{
		Bin: cm.masterBin, RecoveryMode: cm.recoveryMode, Secret: cm.secret,
		WorkerTimeout: workerTimeout, MinCoreUnit: minCoreUnit, Extra: cm.masterArgs, Dir: cm.workDir,
	}, name)
	if err != nil {
		return nil, err
	}
	info := binaryInfo(cm.masterBin)
	info.URL, info.Args = p.URL, p.Args
	return &target{URL: p.URL, proc: p, Info: info}, nil
}

// warnings are what the report should say about the target.
func (t *target) warnings() []string {
	if t.Info.OtherWorkers > 0 {
		return []string{fmt.Sprintf("the master had %d other ALIVE workers at the start: it may place executors there, and they compete for its time", t.Info.OtherWorkers)}
	}
	return nil
}

// shutdown stops the master, then the simulated workers (f, nil if none
// started): the master must not see the workers go silent.
func (t *target) shutdown(mc *masterClient, f *fleet) *MasterLog {
	ml := t.close(mc)
	if f != nil {
		f.close()
	}
	return ml
}

// close stops a master this tool started and summarizes its log. The
// client's idle connections are closed first: the master's graceful
// shutdown would wait for any it has not seen a request on yet.
func (t *target) close(mc *masterClient) *MasterLog {
	if t.proc == nil {
		return nil
	}
	if mc != nil {
		mc.closeIdle()
	}
	exit := t.proc.stop()
	ml := scanMasterLog(t.proc.LogPath)
	ml.Exit = exit
	return &ml
}

// scenario runs one measurement and fills the report.
type scenario func(ctx context.Context, cm *common, r *Report) error

// runScenario wraps a scenario: work directory, header, bound on time,
// printing and the output files.
func runScenario(c *cli.Context, out io.Writer, name string, params any, run scenario) error {
	cm, err := readCommon(c, out)
	if err != nil {
		return err
	}
	cm.host = &testcluster.CommandHost{}
	defer cm.host.Close()
	if cm.workDir == "" {
		dir, err := os.MkdirTemp("", "berthbench-")
		if err != nil {
			return err
		}
		cm.workDir = dir
		if !cm.keepWorkDir {
			defer os.RemoveAll(dir)
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, cm.maxTime)
	defer cancel()
	r := &Report{Tool: "berthbench", Scenario: name, Command: os.Args, Started: time.Now(), Machine: machine(), Params: params, LoadStart: loadAverage()}
	printHeader(out, r)
	err = run(ctx, cm, r)
	r.Elapsed = time.Since(r.Started).Seconds()
	r.LoadEnd = loadAverage()
	if r.Problems == nil {
		r.Problems = []string{}
	}
	for _, t := range r.Tables {
		printTable(out, t)
	}
	printFooter(out, r)
	if cm.keepWorkDir || c.String("work-dir") != "" {
		fmt.Fprintf(out, "work directory (master logs): %s\n", cm.workDir)
	}
	if cm.jsonPath != "" {
		if werr := writeJSON(cm.jsonPath, r); werr != nil && err == nil {
			err = werr
		}
	}
	if cm.csvPath != "" && len(r.Tables) > 0 {
		if werr := writeCSV(cm.csvPath, r.Tables); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// parseInts reads a comma-separated list of positive integers.
func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", flag, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: no value", flag)
	}
	return out, nil
}

// pollEvery is how often a scenario checks what it waits for. The times it
// reports are taken when things happen (a launch arrives, an event is read),
// not when they are polled.
const pollEvery = 2 * time.Millisecond
