package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
)

func logsCommand() *cli.Command {
	flags := func(cmd string) []cli.Flag {
		return []cli.Flag{
			&cli.BoolFlag{Name: "stderr", EnvVars: env("logs", cmd, "stderr"), Usage: "show stderr instead of stdout"},
			&cli.IntFlag{Name: "tail", EnvVars: env("logs", cmd, "tail"), Usage: "show only the last `N` lines (0: all)"},
		}
	}
	return &cli.Command{
		Name:  "logs",
		Usage: "print a driver's or an executor's output (through the master's log proxy)",
		Subcommands: []*cli.Command{
			{
				Name: "driver", Usage: "print a driver's stdout (or stderr)", ArgsUsage: "ID",
				Flags: flags("driver"),
				Action: func(c *cli.Context) error {
					args, err := positional(c, "berth logs driver ID [--stderr] [--tail N]", 1)
					if err != nil {
						return err
					}
					return copyLogs(c, logSource{
						whole: func(cl *client.Client, stream string) (io.ReadCloser, error) {
							return cl.DriverLogs(c.Context, args[0], stream, 0)
						},
						last: func(cl *client.Client, stream string, n int) ([]byte, error) {
							return cl.DriverLogLines(c.Context, args[0], stream, n)
						},
					})
				},
			},
			{
				Name: "executor", Usage: "print an executor's stdout (or stderr)", ArgsUsage: "APP_ID EXEC_ID",
				Flags: flags("executor"),
				Action: func(c *cli.Context) error {
					args, err := positional(c, "berth logs executor APP_ID EXEC_ID [--stderr] [--tail N]", 2)
					if err != nil {
						return err
					}
					execID, err := strconv.Atoi(args[1])
					if err != nil || execID < 0 {
						return fmt.Errorf("executor id %q: want a number", args[1])
					}
					return copyLogs(c, logSource{
						whole: func(cl *client.Client, stream string) (io.ReadCloser, error) {
							return cl.ExecutorLogs(c.Context, args[0], execID, stream, 0)
						},
						last: func(cl *client.Client, stream string, n int) ([]byte, error) {
							return cl.ExecutorLogLines(c.Context, args[0], execID, stream, n)
						},
					})
				},
			},
		},
	}
}

// logSource fetches a log: whole as a stream (lines == 0), or its last lines.
type logSource struct {
	whole func(cl *client.Client, stream string) (io.ReadCloser, error)
	last  func(cl *client.Client, stream string, lines int) ([]byte, error)
}

// copyLogs fetches a log with the command's flags and copies it to stdout.
// Not bounded by --timeout: a log may be long.
func copyLogs(c *cli.Context, src logSource) error {
	tail, err := nonNegative(c, "tail", 0)
	if err != nil {
		return err
	}
	stream := client.Stdout
	if c.Bool("stderr") {
		stream = client.Stderr
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	if tail > 0 {
		data, err := src.last(cl, stream, tail)
		if err != nil {
			return err
		}
		_, err = c.App.Writer.Write(data)
		return err
	}
	rc, err := src.whole(cl, stream)
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := io.Copy(c.App.Writer, rc); err != nil {
		return fmt.Errorf("reading log: %w", err)
	}
	return nil
}
