package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// What berth says of a command line it cannot take: the flag or command
// named as the user typed it, a hint, and exit code 2 for a flag or a
// command it does not know, or a flag without its value (as such errors
// conventionally exit), which tells a mistyped command line from a value
// refused or a request refused (1) and from a change certainly not made
// (3).

// exitUsage is the exit code of a command line berth cannot take.
const exitUsage = 2

// usageFailure is a command line's mistake, with its hint.
func usageFailure(err error, hint string) error {
	if hint == "" {
		return exitHinted{err, exitUsage}
	}
	return exitHinted{hinted{err, hint}, exitUsage}
}

// The errors of Go's flag package (which urfave/cli parses with) name a
// flag "-name"; berth's users type --name.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -{1,2}([A-Za-z0-9][A-Za-z0-9-]*)`)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -{1,2}([A-Za-z0-9][A-Za-z0-9-]*)`)
	badValue      = regexp.MustCompile(`^invalid value (".*") for flag -{1,2}([A-Za-z0-9][A-Za-z0-9-]*): (.*)$`)
	badEnvValue   = regexp.MustCompile(`^could not parse (".*") as \w+ value from environment variable "(\w+)" for flag ([A-Za-z0-9][A-Za-z0-9-]*): (.*)$`)
)

// usageError is every command's OnUsageError: an unknown flag (one of
// berth's own after the command, as Nomad users type it, says where it
// goes), a flag without its value, a bad value.
func usageError(c *cli.Context, err error, _ bool) error {
	cmd := commandPath(c)
	msg := err.Error()
	switch {
	case undefinedFlag.MatchString(msg):
		name := undefinedFlag.FindStringSubmatch(msg)[1]
		if cmd != "berth" && globalFlag(c.App, name) {
			return usageFailure(fmt.Errorf("unknown flag --%s for %s", name, cmd),
				fmt.Sprintf("--%s is one of berth's own flags: give it before the command (berth --%s VALUE %s ...)", name, name, strings.TrimPrefix(cmd, "berth ")))
		}
		return usageFailure(fmt.Errorf("unknown flag --%s", name), cmd+" --help lists its flags")
	case missingValue.MatchString(msg):
		name := missingValue.FindStringSubmatch(msg)[1]
		return usageFailure(fmt.Errorf("flag --%s needs a value", name), cmd+" --help says what it takes")
	case badValue.MatchString(msg): // a value refused: exit 1, as the values berth checks itself
		m := badValue.FindStringSubmatch(msg)
		return hinted{fmt.Errorf("invalid value %s for flag --%s: %s", m[1], m[2], m[3]), cmd + " --help says what it takes"}
	case badEnvValue.MatchString(msg):
		m := badEnvValue.FindStringSubmatch(msg)
		return hinted{fmt.Errorf("invalid value %s of %s for flag --%s: %s", m[1], m[2], m[3], m[4]), cmd + " --help says what it takes"}
	}
	return hinted{err, cmd + " --help"}
}

// commandPath is "berth", or "berth kill app": the command c runs.
func commandPath(c *cli.Context) string {
	var names []string
	for _, ctx := range c.Lineage() {
		// The root context's command is the app itself.
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != c.App.Name {
			names = append(names, ctx.Command.Name)
		}
	}
	slices.Reverse(names)
	return strings.Join(append([]string{"berth"}, names...), " ")
}

// globalFlag reports whether name is one of berth's own flags.
func globalFlag(app *cli.App, name string) bool {
	for _, f := range app.Flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// unknownCommand is the action of berth, and of every command made of
// subcommands: with none given, its help; with one it does not have, a
// clear error naming it (urfave said "No help topic for 'foo'" and exited
// 3, which berth's exit codes keep for "certainly not done").
func unknownCommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowSubcommandHelp(c)
	}
	cmd := commandPath(c)
	subs := c.App.Commands
	if cmd != "berth" {
		subs = c.Command.Subcommands
	}
	var names []string
	for _, s := range subs {
		if !s.Hidden {
			names = append(names, s.Name)
		}
	}
	err := fmt.Errorf("unknown command %q", c.Args().First())
	if cmd != "berth" {
		err = fmt.Errorf("%s: unknown subcommand %q", strings.TrimPrefix(cmd, "berth "), c.Args().First())
	}
	return usageFailure(err,
		fmt.Sprintf("%s takes %s (%s --help)", cmd, strings.Join(names, ", "), cmd))
}

// errUnknown reports whether err is a usage failure, for tests.
func isUsageFailure(err error) bool {
	var e exitHinted
	return errors.As(err, &e) && e.code == exitUsage
}
