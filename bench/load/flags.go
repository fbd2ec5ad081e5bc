package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/testkit/testcluster"
)

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
		&cli.IntFlag{Name: "port-base", Value: 0, Usage: "first slot: worker n listens at 127.0.0.(2+s%250):(10000+s/250) with s = port-base+n"},
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

// fleetParams are the simulated workers of launches and worker-loss: how
// many, and what each announces.
type fleetParams struct {
	Workers     int `json:"workers"`
	WorkerCores int `json:"workerCores"`
	WorkerMemMB int `json:"workerMemoryMB"`
}

// fleetFlags are the flags of fleetParams, with a subcommand's defaults.
func fleetFlags(workers, cores, memoryMB int) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "workers", Value: workers, Usage: "workers"},
		&cli.IntFlag{Name: "worker-cores", Value: cores, Usage: "cores per worker"},
		&cli.IntFlag{Name: "worker-memory-mb", Value: memoryMB, Usage: "memory per worker"},
	}
}

func readFleetParams(c *cli.Context) fleetParams {
	return fleetParams{Workers: c.Int("workers"), WorkerCores: c.Int("worker-cores"), WorkerMemMB: c.Int("worker-memory-mb")}
}

// rampParams are how heartbeats and fleet-failover register their whole
// fleet before they measure (see fleet.ramp).
type rampParams struct {
	RegParallel int      `json:"registerParallel"`
	RampTimeout duration `json:"rampTimeout"`
}

// rampFlags are the flags of rampParams, with a measure's bound on the
// ramp and what its help adds to --register-parallel.
func rampFlags(timeout time.Duration, parallelNote string) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "register-parallel", Value: 64, Usage: "registrations in flight during the ramp" + parallelNote},
		&cli.DurationFlag{Name: "ramp-timeout", Value: timeout, Usage: "bound on registering the W workers"},
	}
}

func readRampParams(c *cli.Context) rampParams {
	return rampParams{RegParallel: c.Int("register-parallel"), RampTimeout: duration(c.Duration("ramp-timeout"))}
}

// duration is a duration flag of a subcommand's parameters: the JSON report
// writes it as the command line gives it ("8s"), not in nanoseconds.
type duration time.Duration

func (d duration) String() string { return time.Duration(d).String() }

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }
