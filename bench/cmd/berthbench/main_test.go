package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// The subcommands are the measures the docs name, and each explains itself.
func TestSubcommandsHelp(t *testing.T) {
	want := []string{"placement", "heartbeats", "worker-loss", "launches", "fleet-failover", "master-failover", "submissions", "spark-vs-standalone"}
	var names []string
	for _, c := range newApp(io.Discard, io.Discard).Commands {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("subcommands %q, want %q", names, want)
	}
	for _, name := range want {
		var out bytes.Buffer
		if err := newApp(&out, &out).Run([]string{"berthbench", name, "--help"}); err != nil {
			t.Errorf("%s --help: %v", name, err)
		}
		if !strings.Contains(out.String(), "berthbench "+name) {
			t.Errorf("%s --help does not name itself:\n%s", name, out.String())
		}
	}
}

// An old tool's name is no subcommand: it is refused, not run.
func TestUnknownSubcommand(t *testing.T) {
	var out bytes.Buffer
	app := newApp(&out, &out)
	app.ExitErrHandler = func(*cli.Context, error) {} // urfave/cli would exit the test
	if err := app.Run([]string{"berthbench", "failover-of-worker"}); err == nil {
		t.Errorf("an unknown subcommand ran:\n%s", out.String())
	}
}
