package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/termtext"
)

// ask makes the client and runs do with it, bounded by --timeout.
func ask(c *cli.Context, do func(*client.Client, context.Context) error) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(c)
	defer cancel()
	return do(cl, ctx)
}

// show is a listing command without arguments: it prints what get
// answers as JSON with --json, else as table renders it.
func show[T any](c *cli.Context, usage string, get func(*client.Client, context.Context) (T, error), table func(io.Writer, T) error) error {
	if c.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (usage: %s)", c.Args().Slice(), usage)
	}
	return ask(c, func(cl *client.Client, ctx context.Context) error {
		v, err := get(cl, ctx)
		switch {
		case err != nil:
			return err
		case c.Bool("json"):
			return printJSON(c.App.Writer, v)
		}
		return table(c.App.Writer, v)
	})
}

// jsonFlag is a listing's --json; what names what it prints.
func jsonFlag(cmd, what string) cli.Flag {
	return &cli.BoolFlag{Name: "json", EnvVars: env(cmd, "json"), Usage: "print " + what + " as JSON"}
}

// row writes one row of a tabwriter table, each cell escaped on its own:
// escaping the whole line would turn the tabs that part the cells into \t.
func row(w io.Writer, cells ...string) {
	for i, cell := range cells {
		cells[i] = termtext.Escape(cell)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// listCommand is `berth KIND list [--json]`: get's answer as a table, or
// as JSON (what names it).
func listCommand[T any](kind, usage, what string, get func(*client.Client, context.Context) (T, error), table func(io.Writer, T) error) *cli.Command {
	usageText := "berth " + kind + " list [--json]"
	return &cli.Command{
		Name: "list", Usage: usage, UsageText: usageText,
		Flags: []cli.Flag{jsonFlag(kind+"-list", what)},
		Action: func(c *cli.Context) error {
			return show(c, usageText, get, table)
		},
	}
}

// deleteCommand is `berth KIND delete NAME`.
func deleteCommand(kind, usage string, del func(*client.Client, context.Context, string) error) *cli.Command {
	return &cli.Command{
		Name: "delete", Usage: usage, ArgsUsage: "NAME",
		Action: func(c *cli.Context) error {
			// onID prints what its call answers: a delete answers nothing.
			gone := false
			call := func(cl *client.Client, ctx context.Context, name string) (struct{}, error) {
				err := del(cl, ctx, name)
				if errors.Is(err, client.ErrGoneAfterRetry) {
					gone, err = true, nil // it is gone, which is what was asked
				}
				return struct{}{}, err
			}
			return onID(c, "berth "+kind+" delete NAME", call, func(name string, _ struct{}) error {
				if gone {
					_, err := fmt.Fprintf(c.App.Writer, "deleted %s %s (gone when the request was repeated: by its first attempt, or by someone else)\n", kind, termtext.Escape(name))
					return err
				}
				_, err := fmt.Fprintf(c.App.Writer, "deleted %s %s\n", kind, termtext.Escape(name))
				return err
			})
		},
	}
}
