package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

const tenantCreateUsage = "berth tenant create NAME --queues Q1,Q2 [--default-queue Q1] [--unix-user USER]"

// tenantCommand is `berth tenant create|list|delete` (docs/QUEUES.md).
func tenantCommand() *cli.Command {
	return &cli.Command{
		Name:  "tenant",
		Usage: "create, list and delete the tenants who submit into the queues",
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "create a tenant and print its token, this once",
				UsageText: tenantCreateUsage,
				Description: `The token is the last line of the output, alone, so that
TOKEN=$(berth tenant create ...) keeps it: the masters keep only its hash.
A tenant runs berth with --token (or BERTH_TOKEN); it submits into its
queues and manages what it submitted. An operator's command.`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "queues", EnvVars: env("tenant-create", "queues"),
						Usage: "required: the queues the tenant may submit into, `Q1,Q2` (a submission names one with --queue)"},
					&cli.StringFlag{Name: "default-queue", EnvVars: env("tenant-create", "default-queue"),
						Usage: "the queue `Q` of the tenant's submissions that name none (default: its only queue, if it has one)"},
					&cli.StringFlag{Name: "unix-user", EnvVars: env("tenant-create", "unix-user"),
						Usage: "the Unix `USER` its processes run as on workers with --run-as dynamic"},
				},
				Action: createTenant,
			},
			listCommand("tenant", "the tenants and their queues (never their tokens)",
				"the master's Tenants", (*client.Client).Tenants, printTenants),
			deleteCommand("tenant", "delete a tenant: its token stops working; what it submitted runs on",
				(*client.Client).DeleteTenant),
		},
	}
}

func createTenant(c *cli.Context) error {
	args, err := positional(c, tenantCreateUsage, 1)
	if err != nil {
		return err
	}
	// Comma-separated and trimmed, like --master.
	spec := wire.TenantSpec{Queues: client.SplitMasters(c.String("queues")), UnixUser: c.String("unix-user"), DefaultQueue: c.String("default-queue")}
	if len(spec.Queues) == 0 {
		return errors.New("--queues: missing; want the queues the tenant may submit into, e.g. --queues etl,adhoc (berth queue list)")
	}
	for _, q := range spec.Queues {
		if err := wire.CheckQueueName("--queues", q); err != nil {
			return err
		}
	}
	if q := spec.DefaultQueue; q != "" && !slices.Contains(spec.Queues, q) {
		return fmt.Errorf("--default-queue %s: want one of --queues (%s)", termtext.Escape(q), strings.Join(spec.Queues, ", "))
	}
	return ask(c, func(cl *client.Client, ctx context.Context) error {
		created, err := cl.CreateTenant(ctx, args[0], spec)
		if errors.Is(err, client.ErrUnknownOutcome) {
			name := termtext.Escape(args[0])
			return hinted{err, fmt.Sprintf("the tenant may have been created with a token nobody has: if berth tenant list shows %s, run berth tenant delete %s, then create it again", name, name)}
		}
		if err != nil {
			return err
		}
		// On stderr, so that stdout is the token alone.
		fmt.Fprintf(c.App.ErrWriter, "created tenant %s; its token, shown this once (keep it safe, as you would a password):\n", termtext.Escape(created.Name))
		_, err = fmt.Fprintln(c.App.Writer, termtext.Escape(created.Token))
		return err
	})
}

func printTenants(out io.Writer, ts wire.Tenants) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tQUEUES\tDEFAULT QUEUE\tUNIX USER\tCREATED")
	for _, t := range ts.Tenants {
		def := t.DefaultQueue
		if def == "" && len(t.Queues) == 1 {
			def = t.Queues[0]
		}
		row(w, t.Name, strings.Join(t.Queues, ","), orDash(def), orDash(t.UnixUser), t.CreatedAt.Local().Format(time.DateTime))
	}
	return w.Flush()
}

// auditCommand is `berth audit`: who changed what, from the audit log.
func auditCommand() *cli.Command {
	const usage = "berth audit [--since 1h] [--tenant NAME] [--json]"
	return &cli.Command{
		Name:      "audit",
		Usage:     "the audit log: the state-changing requests, who made them and how they ended",
		UsageText: usage,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "since", EnvVars: env("audit", "since"), DefaultText: "all the masters keep",
				Usage: "only the entries of the last `D`, e.g. 1h"},
			&cli.StringFlag{Name: "tenant", EnvVars: env("audit", "tenant"),
				Usage: "only the requests made for tenant `NAME` (by it, or by its drivers)"},
			jsonFlag("audit", "the master's Audit"),
		},
		Action: func(c *cli.Context) error {
			since := c.Duration("since")
			if since < 0 || c.IsSet("since") && since == 0 {
				return fmt.Errorf("invalid value %s for flag --since: want a positive duration, e.g. 1h", since)
			}
			return show(c, usage, func(cl *client.Client, ctx context.Context) (wire.Audit, error) {
				return cl.Audit(ctx, since, c.String("tenant"))
			}, printAudit)
		},
	}
}

// printAudit writes the entries' table; a refusal's outcome carries its
// HTTP status.
func printAudit(out io.Writer, a wire.Audit) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tPRINCIPAL\tTENANT\tROUTE\tTARGET\tOUTCOME")
	for _, e := range a.Entries {
		outcome := e.Outcome
		if e.Status/100 != 2 && e.Status != 0 {
			outcome += " (" + strconv.Itoa(e.Status) + ")"
		}
		row(w, e.Time.Local().Format(time.DateTime), e.Principal, orDash(e.Tenant), e.Route, orDash(e.Target), outcome)
	}
	return w.Flush()
}
