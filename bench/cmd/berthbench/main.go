// Command berthbench measures berth, apart from the product it measures:
// placement policies on replayed traces, one real master under the load of
// simulated workers, and a cluster of real masters and workers failing over
// and committing submissions. docs/BENCHMARKS.md gives the figures and the
// commands that took them.
//
//	make build bench-tools
//	berthbench placement --seed 1
//	berthbench heartbeats --master-bin bin/master --workers 1000,5000
//	berthbench master-failover --bin bin --scenario kill,handover
package main

import (
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/bench/failover"
	"github.com/berth-cluster/berth/bench/internal/benchtool"
	"github.com/berth-cluster/berth/bench/load"
	"github.com/berth-cluster/berth/bench/placement"
	"github.com/berth-cluster/berth/bench/sparkcmp"
)

const description = `Each subcommand is one measure; --help after it says what it measures, how,
and its flags. Each prints the machine, its own command line and the exact
flags of every daemon it starts.

  placement        placement policies replaying cluster traces (no daemon)
  heartbeats       one master holding W simulated workers' heartbeats
  worker-loss      a worker's death to its executors replaced elsewhere
  launches         executor launches a second, many apps registered at once
  master-failover  a 3-master Raft cluster losing its leader (kill, handover)
  submissions      submissions committed a second (Raft and bolt)
  spark-vs-standalone  berth against Spark standalone, the same Spark jobs side by side

master-failover and submissions need bin/master and bin/worker (make
build), the three before them bin/master; spark-vs-standalone also
bin/berth-spark.jar and SPARK_HOME (scripts/spark-deps.sh).`

func main() { benchtool.Main(newApp(os.Stdout, os.Stderr)) }

func newApp(stdout, stderr io.Writer) *cli.App {
	var commands []*cli.Command
	commands = append(commands, placement.Commands(stdout)...)
	commands = append(commands, load.Commands(stdout)...)
	commands = append(commands, failover.Commands(stdout, stderr)...)
	commands = append(commands, sparkcmp.Commands(stdout, stderr)...)
	return &cli.App{
		Name:            "berthbench",
		Usage:           "measure berth: placement, a master under load, failover and submissions of a real cluster",
		UsageText:       "berthbench SUBCOMMAND [options]",
		Description:     description,
		HideHelpCommand: true,
		Writer:          stdout,
		ErrWriter:       stderr,
		Commands:        commands,
	}
}
