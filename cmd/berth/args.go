package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/units"
	"github.com/berth-cluster/berth/wire"
)

// errHelpShown ends a command that printed its help instead of running.
var errHelpShown = errors.New("help shown")

// positional returns the command's n positional arguments. urfave/cli v2
// stops parsing flags at the first argument, but people write
// `berth logs driver ID --stderr`: flags found among the arguments are set
// here, with the same errors.
func positional(c *cli.Context, usage string, n int) ([]string, error) {
	args := c.Args().Slice()
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			// -1 is a number given, not a flag: let the command say why
			// it is refused (berth app limit ID -1).
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			// Never act on `berth kill app ID --help`: show the help.
			cli.HelpPrinter(c.App.Writer, cli.CommandHelpTemplate, c.Command)
			return nil, errHelpShown
		}
		f := findFlag(c.Command.Flags, name)
		if f == nil {
			return nil, usageFailure(fmt.Errorf("unknown flag --%s", name), "usage: "+usage)
		}
		if _, isBool := f.(*cli.BoolFlag); isBool && !hasValue {
			value, hasValue = "true", true
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, usageFailure(fmt.Errorf("flag --%s needs a value", name), "usage: "+usage)
			}
			i++
			value = args[i]
		}
		if err := c.Set(name, value); err != nil {
			return nil, fmt.Errorf("invalid value %q for flag --%s: %w", value, name, err)
		}
	}
	if len(pos) != n {
		// A command line's mistake, as an unknown flag is: exit 2.
		what := "missing arguments"
		if len(pos) > n {
			what = fmt.Sprintf("unexpected arguments %q", pos[n:])
		}
		return nil, usageFailure(errors.New(what), "usage: "+usage)
	}
	return pos, nil
}

// isNumber reports whether a parses as a number, as a negative one does.
func isNumber(a string) bool {
	_, err := strconv.ParseFloat(a, 64)
	return err == nil
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// argv returns the command line after "--" (or after the flags).
func argv(c *cli.Context, what string) ([]string, error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		orFile := ""
		if findFlag(c.Command.Flags, "file") != nil {
			orFile = ` (or in the "command" of --file)`
		}
		return nil, fmt.Errorf("no command: put the %s's command line after --, e.g. berth %s -- /opt/jobs/pi --tasks 100%s", what, c.Command.Name, orFile)
	}
	return args, nil
}

// envPairs parses the K=V values of an --env flag.
func envPairs(c *cli.Context, flag string) (map[string]string, error) {
	vals := c.StringSlice(flag)
	if len(vals) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(vals))
	for _, kv := range vals {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\n") {
			return nil, fmt.Errorf("invalid value %q for flag --%s: want NAME=VALUE", kv, flag)
		}
		out[k] = v
	}
	return out, nil
}

// resourceFlag parses a repeated NAME=AMOUNT flag of custom resources.
func resourceFlag(c *cli.Context, flag string) (wire.ResourceAmounts, error) {
	vals := c.StringSlice(flag)
	if len(vals) == 0 {
		return nil, nil
	}
	out := make(wire.ResourceAmounts, len(vals))
	for _, v := range vals {
		name, amount, err := wire.ParseResourceAmount(v)
		if err != nil {
			return nil, fmt.Errorf("invalid value for flag --%s: %w", flag, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("invalid value for flag --%s: %s given twice", flag, name)
		}
		out[name] = amount
	}
	return out, nil
}

// memoryFlag parses a memory size flag (512m, 2g).
func memoryFlag(c *cli.Context, flag string) (int, error) {
	mb, err := units.ParseMemoryMB(c.String(flag))
	if err != nil {
		return 0, fmt.Errorf("invalid value for flag --%s: %w", flag, err)
	}
	return mb, nil
}

// nonNegative checks an int flag.
func nonNegative(c *cli.Context, flag string, least int) (int, error) {
	v := c.Int(flag)
	if v < least {
		return 0, fmt.Errorf("invalid value %s for flag --%s: must be at least %d", strconv.Itoa(v), flag, least)
	}
	return v, nil
}

// flagReader reads a command's flags in turn and keeps the first error (it
// names its flag), so that a command reads all it needs, then checks once.
type flagReader struct {
	c   *cli.Context
	err error
}

// readFlag is what parse makes of the flag, or the zero value once a flag
// read before it failed.
func readFlag[T any](f *flagReader, name string, parse func(*cli.Context, string) (T, error)) T {
	var v T
	if f.err == nil {
		v, f.err = parse(f.c, name)
	}
	return v
}

func (f *flagReader) count(name string, least int) int {
	return readFlag(f, name, func(c *cli.Context, name string) (int, error) { return nonNegative(c, name, least) })
}

func (f *flagReader) memory(name string) int { return readFlag(f, name, memoryFlag) }

func (f *flagReader) env(name string) map[string]string { return readFlag(f, name, envPairs) }

func (f *flagReader) resources(name string) wire.ResourceAmounts {
	return readFlag(f, name, resourceFlag)
}

// argv is the command line after "--"; what names its process.
func (f *flagReader) argv(what string) []string { return readFlag(f, what, argv) }

// runSubmitFlags are what run and submit share: --queue, --priority and
// --stop-after-disconnect.
func runSubmitFlags(cmd string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "queue", EnvVars: env(cmd, "queue"),
			Usage: "the `QUEUE` to run in (default: for a tenant, its default queue, set by tenant create --default-queue, else its only queue; otherwise the queue named default)"},
		&cli.IntFlag{Name: "priority", EnvVars: env(cmd, "priority"),
			Usage: "`P`: the order within its queue, higher first, -1000000 to 1000000"},
		&cli.DurationFlag{Name: "stop-after-disconnect", EnvVars: env(cmd, "stop-after-disconnect"),
			Usage: "stop its processes on a worker out of touch with every master for `D` (e.g. 90s), so that none runs on beside its replacement; default: never (docs/HA.md)"},
	}
}

// stopAfterDisconnectFlag reads --stop-after-disconnect.
func stopAfterDisconnectFlag(c *cli.Context, flag string) (wire.Duration, error) {
	d := wire.Duration(c.Duration(flag))
	if err := wire.CheckStopAfterDisconnect(d); err != nil {
		return 0, fmt.Errorf("invalid value %s for flag --%s: want 0 (never) or from 1s to %s", d.D(), flag, wire.MaxStopAfterDisconnect)
	}
	return d, nil
}

func (f *flagReader) stopAfterDisconnect(name string) wire.Duration {
	return readFlag(f, name, stopAfterDisconnectFlag)
}

// queueFlag reads a queue's name, "" for the default queue.
func queueFlag(c *cli.Context, flag string) (string, error) {
	q := c.String(flag)
	if q == "" {
		return "", nil
	}
	return q, wire.CheckQueueName("--"+flag, q)
}

// priorityFlag reads a priority within a queue.
func priorityFlag(c *cli.Context, flag string) (int, error) {
	p := c.Int(flag)
	if err := wire.CheckPriority(p); err != nil {
		return 0, fmt.Errorf("invalid value for flag --%s: %w", flag, err)
	}
	return p, nil
}

func (f *flagReader) queue(name string) string { return readFlag(f, name, queueFlag) }

func (f *flagReader) priority(name string) int { return readFlag(f, name, priorityFlag) }
