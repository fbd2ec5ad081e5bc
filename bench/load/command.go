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
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/testkit/testcluster"
)

// fleetDescription ends the description of every subcommand: what the
// simulated workers do, and how a run ends.
const fleetDescription = `The simulated workers: N of them run in this process. Worker n listens at
127.0.0.(2+s%250):(10000+s/250), s = port-base+n, and registers that address,
where the master sends its commands. Each
registers, sends its (empty) latest state, heartbeats every interval the master
asks for (at a random phase), fences commands by epoch (409 when stale), and
answers a launch with 200 and then a RUNNING report; a kill or an
ApplicationFinished with KILLED reports. A re-registration the master asks for
(Reconnect=true, or 404 on a heartbeat) of a worker the tool did not kill is a
false expiry.

Every loop is bounded by count and time; the master the tool started is
stopped with SIGTERM (by pid) at the end, and its log is scanned for warnings,
errors and panics.`

// Commands are berthbench's subcommands of this package, in the order of
// its help.
func Commands(stdout io.Writer) []*cli.Command {
	return []*cli.Command{heartbeatsCommand(stdout), workerLossCommand(stdout), launchesCommand(stdout), fleetFailoverCommand(stdout)}
}

// measure is one subcommand of this package: its own flags, which the
// common ones follow, read into its parameters P, and the scenario it runs
// with them. Every subcommand runs the same way (see runScenario), so that
// each report has the same header, files and bounds.
type measure[P any] struct {
	name, usage string
	description string // the fleet's description follows it
	flags       []cli.Flag
	params      func(*cli.Context) (P, error) // reads and checks the subcommand's own flags
	run         func(ctx context.Context, cm *common, p P, r *Report) error
}

func (m measure[P]) command(out io.Writer) *cli.Command {
	return &cli.Command{
		Name:        m.name,
		Usage:       m.usage,
		Description: m.description + "\n\n" + fleetDescription,
		Flags:       append(m.flags, commonFlags()...),
		Action: func(c *cli.Context) error {
			p, err := m.params(c)
			if err != nil {
				return err
			}
			return runScenario(c, out, m.name, p, func(ctx context.Context, cm *common, r *Report) error {
				return m.run(ctx, cm, p, r)
			})
		},
	}
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

// pollEvery is how often a scenario checks what it waits for. The times it
// reports are taken when things happen (a launch arrives, an event is read),
// not when they are polled.
const pollEvery = 2 * time.Millisecond
