package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/wire"
)

// Where an app's or driver's processes may go (docs/PLACEMENT.md): its
// constraints on the workers' labels, and an app's gang.

// constraintFlag is run's and submit's --constraint, repeatable; each
// value kept whole (its values are a comma-separated list).
func constraintFlag(cmd string) cli.Flag {
	return repeatedFlag(cmd, "constraint",
		"only on workers whose `LABEL=V1,V2` is one of the values (LABEL!=V1,V2: none of them; repeatable, all must hold), e.g. gpu-model=T4,P100")
}

// gangFlags are run's --gang and --gang-restart.
func gangFlags(cmd string) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "gang", EnvVars: env(cmd, "gang"),
			Usage: "start the first `N` executors together or not at all (MPI, distributed training; needs --cores-per-executor)"},
		&cli.BoolFlag{Name: "gang-restart", EnvVars: env(cmd, "gang-restart"),
			Usage: "when a member of the gang ends, kill the others and start the whole gang again (default: replace the member alone)"},
	}
}

// readConstraints sets *cs from --constraint, if given (replacing
// --file's).
func readConstraints(c *cli.Context, cs *[]wire.Constraint) error {
	if !c.IsSet("constraint") {
		return nil
	}
	var out []wire.Constraint
	for _, v := range repeatedValues(c, "constraint") {
		x, err := wire.ParseConstraint(v)
		if err != nil {
			return fmt.Errorf("--constraint: %w", err)
		}
		out = append(out, x)
	}
	if err := wire.CheckConstraints(out); err != nil {
		return fmt.Errorf("--constraint: %w", err)
	}
	*cs = out
	return nil
}

// readGang sets an app's gang from --gang and --gang-restart, if given.
func readGang(c *cli.Context, d *wire.AppDescription) error {
	if c.IsSet("gang") {
		n := c.Int("gang")
		if n < 0 {
			return fmt.Errorf("--gang %d: want a number of executors, or 0 for none", n)
		}
		d.Gang = n
	}
	if c.IsSet("gang-restart") {
		d.GangRestart = c.Bool("gang-restart")
	}
	if !c.IsSet("gang") && !c.IsSet("gang-restart") {
		return nil // --file's, as it is: the master checks it
	}
	if d.Gang > 0 && d.CoresPerExecutor <= 0 {
		return fmt.Errorf("--gang %d needs --cores-per-executor: a gang is N executors of a fixed size", d.Gang)
	}
	if d.GangRestart && d.Gang == 0 {
		return fmt.Errorf("--gang-restart needs --gang N")
	}
	return nil
}
