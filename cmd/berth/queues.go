package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

const queueSetUsage = "berth queue set NAME [--weight W] [--guarantee cores=N,memory=SIZE,gpu=G] [--limit cores=N,memory=SIZE] [--preempt=true|false]"

// queueCommand is `berth queue set|list|delete` (docs/QUEUES.md).
func queueCommand() *cli.Command {
	return &cli.Command{
		Name:  "queue",
		Usage: "set, list and delete the queues that share the cluster",
		Subcommands: []*cli.Command{
			{
				Name:      "set",
				Usage:     "create a queue or change its settings",
				UsageText: queueSetUsage,
				Description: `A flag left out leaves that setting as it is (a new queue's: weight 1, no
guarantee, no limit, preemptible). --guarantee and --limit take cores,
memory (512m, 2g) and custom resources (gpu=2, gpu=0.5), comma-separated;
"none" clears them. An operator's command.`,
				Flags: []cli.Flag{
					&cli.Float64Flag{Name: "weight", EnvVars: env("queue-set", "weight"), DefaultText: "1 for a new queue",
						Usage: "`W`: the queue's weight in the fair share, 2 gets twice the share of 1"},
					&cli.StringFlag{Name: "guarantee", EnvVars: env("queue-set", "guarantee"),
						Usage: "`AMOUNTS` served first, taken back from other queues by preemption: cores=N,memory=SIZE,gpu=G (none: no guarantee)"},
					&cli.StringFlag{Name: "limit", EnvVars: env("queue-set", "limit"),
						Usage: "`AMOUNTS` the queue never holds more of: cores=N,memory=SIZE,gpu=G, 0 or left out bounds nothing (none: no limit)"},
					&cli.StringFlag{Name: "preempt", EnvVars: env("queue-set", "preempt"), DefaultText: "true for a new queue",
						Usage: "`true|false`: whether what it holds above its fair share may be taken back for other queues"},
				},
				Action: setQueue,
			},
			listCommand("queue", "the queues: weight, guarantee, limit, use, dominant and fair share, waiting demand",
				"the master's Queues", (*client.Client).Queues, printQueues),
			deleteCommand("queue", "delete a queue that holds no active app or driver and that no tenant submits into",
				(*client.Client).DeleteQueue),
		},
	}
}

func setQueue(c *cli.Context) error {
	args, err := positional(c, queueSetUsage, 1)
	if err != nil {
		return err
	}
	if err := wire.CheckQueueName("queue", args[0]); err != nil {
		return err
	}
	spec, err := queueSpec(c)
	if err != nil {
		return err
	}
	return ask(c, func(cl *client.Client, ctx context.Context) error {
		st, err := cl.PutQueue(ctx, args[0], spec)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(c.App.Writer, termtext.Escape(fmt.Sprintf("queue %s: weight %s, guarantee %s, limit %s, preempt %t",
			st.Name, weight(st.Weight), formatAmount(st.Guarantee), formatLimit(st.Limit), st.Preempt)))
		return err
	})
}

// queueSpec is the QueueSpec of berth queue set's flags: only those given.
func queueSpec(c *cli.Context) (wire.QueueSpec, error) {
	var spec wire.QueueSpec
	if c.IsSet("weight") {
		w := c.Float64("weight")
		if err := wire.CheckWeight(w); err != nil {
			return spec, fmt.Errorf("invalid value for flag --weight: %w", err)
		}
		spec.Weight = &w
	}
	f := &flagReader{c: c}
	spec.Guarantee = readFlag(f, "guarantee", amountFlag)
	spec.Limit = readFlag(f, "limit", amountFlag)
	if f.err != nil {
		return spec, f.err
	}
	if c.IsSet("preempt") {
		v := c.String("preempt")
		p, err := strconv.ParseBool(v)
		if err != nil {
			return spec, fmt.Errorf("invalid value %q for flag --preempt: want true or false", v)
		}
		spec.Preempt = &p
	}
	return spec, nil
}

// printQueues writes the queues' table: the shares as percentages of the
// capacity, the amounts as --guarantee takes them; then a line for each
// queue the master is reclaiming capacity for. The names and the reasons
// are the master's, escaped.
func printQueues(out io.Writer, qs wire.Queues) error {
	fmt.Fprintf(out, "Capacity: %s\n\n", termtext.Escape(formatAmount(qs.Capacity)))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tWEIGHT\tGUARANTEE\tLIMIT\tIN USE\tDOMINANT SHARE\tFAIR SHARE\tWAITING\tAPPS\tDRIVERS\tPREEMPT")
	for _, q := range qs.Queues {
		row(w, q.Name, weight(q.Weight), formatAmount(q.Guarantee), formatLimit(q.Limit), formatAmount(q.InUse),
			percent(q.DominantShare), percent(q.FairDominantShare), formatAmount(q.Waiting),
			strconv.Itoa(q.Apps), strconv.Itoa(q.Drivers), strconv.FormatBool(q.Preempt))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, q := range qs.Queues {
		if q.Reclaiming != "" {
			fmt.Fprintf(out, "queue %s: %s\n", termtext.Escape(q.Name), termtext.Escape(q.Reclaiming))
		}
	}
	return nil
}

// formatLimit is a queue's limit as formatAmount renders it; nil bounds
// nothing.
func formatLimit(l *wire.Amount) string {
	if l == nil {
		return "-"
	}
	return formatAmount(*l)
}

func weight(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) }

func percent(share float64) string { return strconv.FormatFloat(share*100, 'f', 1, 64) + "%" }
