package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
)

func logsCommand() *cli.Command {
	// sub is `berth logs NAME ARGS... [--stderr] [--tail N]`: argsUsage
	// names the positional arguments ("APP_ID EXEC_ID"), source makes the
	// log's source from them, whose names the log's owner in the usage.
	sub := func(name, whose, argsUsage string, source func(c *cli.Context, args []string) (logSource, error)) *cli.Command {
		return &cli.Command{
			Name: name, Usage: "print " + whose + " stdout (or stderr)", ArgsUsage: argsUsage,
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "stderr", EnvVars: env("logs", name, "stderr"), Usage: "show stderr instead of stdout"},
				&cli.IntFlag{Name: "tail", EnvVars: env("logs", name, "tail"), Usage: "show only the last `N` lines (0: all)"},
				&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, EnvVars: env("logs", name, "follow"),
					Usage: "keep printing the output as it grows, until the process ends (or Ctrl-C)"},
			},
			Action: func(c *cli.Context) error {
				args, err := positional(c, "berth logs "+name+" "+argsUsage+" [--stderr] [--tail N] [--follow]", len(strings.Fields(argsUsage)))
				if err != nil {
					return err
				}
				src, err := source(c, args)
				if err != nil {
					return err
				}
				return copyLogs(c, src)
			},
		}
	}
	return &cli.Command{
		Name:  "logs",
		Usage: "print a driver's or an executor's output (through the master's log proxy)",
		Subcommands: []*cli.Command{
			sub("driver", "a driver's", "ID", func(c *cli.Context, args []string) (logSource, error) {
				return logSource{
					whole: func(cl *client.Client, stream string) (io.ReadCloser, error) {
						return cl.DriverLogs(c.Context, args[0], stream, 0)
					},
					last: func(cl *client.Client, stream string, n int) ([]byte, error) {
						return cl.DriverLogLines(c.Context, args[0], stream, n)
					},
					follow: func(cl *client.Client, stream string, f client.Follow) error {
						f.Ended = cl.DriverEnded(args[0])
						return cl.FollowDriverLog(c.Context, args[0], stream, f, c.App.Writer)
					},
				}, nil
			}),
			sub("executor", "an executor's", "APP_ID EXEC_ID", func(c *cli.Context, args []string) (logSource, error) {
				execID, err := strconv.Atoi(args[1])
				if err != nil || execID < 0 {
					return logSource{}, fmt.Errorf("executor id %q: want a number", args[1])
				}
				return logSource{
					whole: func(cl *client.Client, stream string) (io.ReadCloser, error) {
						return cl.ExecutorLogs(c.Context, args[0], execID, stream, 0)
					},
					last: func(cl *client.Client, stream string, n int) ([]byte, error) {
						return cl.ExecutorLogLines(c.Context, args[0], execID, stream, n)
					},
					follow: func(cl *client.Client, stream string, f client.Follow) error {
						f.Ended = cl.ExecutorEnded(args[0], execID)
						return cl.FollowExecutorLog(c.Context, args[0], execID, stream, f, c.App.Writer)
					},
				}, nil
			}),
		},
	}
}

// logSource fetches a log: whole as a stream (lines == 0), or its last lines.
type logSource struct {
	whole func(cl *client.Client, stream string) (io.ReadCloser, error)
	last  func(cl *client.Client, stream string, lines int) ([]byte, error)
	// follow copies it as it grows, from its last f.TailLines lines
	// (all: 0), until the process ends.
	follow func(cl *client.Client, stream string, f client.Follow) error
}

// copyLogs fetches a log with the command's flags and copies it to stdout.
// Not bounded by --timeout: a log may be long.
//
// The log is copied raw, unlike every other text berth prints (termtext):
// it is the process's own output, which the user asked for as data, as
// with kubectl logs or cat, colours and progress bars included, and
// `berth logs ... > file` must get it byte for byte. Whoever reads an
// untrusted log on a terminal pipes it through `cat -v` or `less`.
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
	if c.Bool("follow") {
		err := src.follow(cl, stream, client.Follow{TailLines: tail, Gap: func() {
			fmt.Fprintln(c.App.ErrWriter, "berth: (some output was rolled away by the worker before it could be read)")
		}})
		if errors.Is(err, context.Canceled) {
			return nil // Ctrl-C: following ends there
		}
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
