package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/wire"
)

// workerCommand is `berth worker drain|undrain ID`.
func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "drain a worker, or end its drain",
		Subcommands: []*cli.Command{
			{
				Name:      "drain",
				Usage:     "place nothing new on a worker; what runs there has until --deadline to end, then it is killed and replaced elsewhere",
				ArgsUsage: "ID",
				Flags: []cli.Flag{&cli.DurationFlag{Name: "deadline", Value: 10 * time.Minute, EnvVars: env("worker-drain", "deadline"),
					Usage: "how long executors and drivers may take to end on their own (at most 168h)"}},
				Action: func(c *cli.Context) error {
					return oneShot(c, "berth worker drain ID [--deadline 10m]", func(ctx context.Context, id string) error {
						// Read here: the flag may follow the ID (positional sets it).
						d := c.Duration("deadline")
						if d <= 0 || d > 7*24*time.Hour {
							return fmt.Errorf("--deadline %s: want more than 0 and at most 168h", d)
						}
						cl, err := newClient(c)
						if err != nil {
							return err
						}
						st, err := cl.DrainWorker(ctx, id, d)
						if err != nil {
							return err
						}
						return printWorker(c, st)
					})
				},
			},
			{
				Name:      "undrain",
				Usage:     "end a worker's drain before its deadline: it is ALIVE again",
				ArgsUsage: "ID",
				Action: func(c *cli.Context) error {
					return oneShot(c, "berth worker undrain ID", func(ctx context.Context, id string) error {
						cl, err := newClient(c)
						if err != nil {
							return err
						}
						st, err := cl.UndrainWorker(ctx, id)
						if err != nil {
							return err
						}
						return printWorker(c, st)
					})
				},
			},
		},
	}
}

func printWorker(c *cli.Context, st wire.WorkerStatus) error {
	if st.DrainDeadline != nil {
		_, err := fmt.Fprintf(c.App.Writer, "worker %s %s until %s\n", st.ID, st.State, st.DrainDeadline.Local().Format(time.RFC3339))
		return err
	}
	_, err := fmt.Fprintf(c.App.Writer, "worker %s %s\n", st.ID, st.State)
	return err
}
