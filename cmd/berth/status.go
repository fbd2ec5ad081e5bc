package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the masters, workers, apps and drivers",
		Description: `Asks the leader: the first master that answers, or the leader it names.
Without a reachable leader a follower answers from its replica (view
"follower"): durable state only, without executors or heartbeats.

The workers are summarised (counts by state, cores and memory in use) and
listed one by one when there are at most 50 of them, or with --workers.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", EnvVars: env("status", "json"), Usage: "print the master's ClusterStatus as JSON"},
			&cli.BoolFlag{Name: "workers", EnvVars: env("status", "workers"), Usage: "list every worker, however many"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unexpected arguments %q (usage: berth status [--json])", c.Args().Slice())
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			ctx, cancel := callCtx(c)
			defer cancel()
			var st wire.ClusterStatus
			if c.Bool("workers") {
				st, err = cl.LeaderCluster(ctx)
			} else if st, err = cl.LeaderClusterSummary(ctx); err == nil && st.WorkerSummary.Total <= listedWorkers {
				st, err = cl.LeaderCluster(ctx) // few enough to list
			}
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, st)
			}
			return printStatus(c.App.Writer, st, time.Now())
		},
	}
}

// listedWorkers: berth status lists the workers one by one up to this many.
const listedWorkers = 50

// printStatus writes the readable summary of st. Every text in it comes
// from the masters, the workers or the users who named their apps: each is
// escaped (termtext), so that none can act on the operator's terminal or
// break the table's columns.
func printStatus(out io.Writer, st wire.ClusterStatus, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	leader := st.Leader
	if leader == "" {
		leader = "unknown"
	}
	fmt.Fprintf(w, "Master %s\tstatus %s\tview %s\tleader %s\tepoch %d\tversion %s\n",
		termtext.Escape(st.MasterID), termtext.Escape(st.Status), termtext.Escape(st.View), termtext.Escape(leader), st.Epoch, termtext.Escape(orDash(st.Version)))
	if st.View == wire.ViewFollower {
		fmt.Fprintln(w, "(a follower's replica: no executors, no heartbeats)")
	}
	for _, m := range st.Masters {
		role := "follower"
		if m.Leader {
			role = "leader"
		}
		if !m.Voter {
			role += ", non-voter"
		}
		fmt.Fprintf(w, "  %s\t%s\traft %s\t%s\tversion %s\n", termtext.Escape(m.ID), termtext.Escape(orDash(m.APIAddr)), termtext.Escape(m.RaftAddr), role, termtext.Escape(orDash(m.Version)))
	}
	if mixedVersions(st.Masters) {
		fmt.Fprintln(w, "(the masters run different versions: an upgrade under way?)")
	}

	ws := st.WorkerSummary
	fmt.Fprintf(w, "\nWorkers: %d (%d alive, %d decommissioning, %d dead, %d other); cores %d/%d used, memory %s/%s used\n",
		ws.Total, ws.Alive, ws.Decommissioning, ws.Dead, ws.Other, ws.CoresUsed, ws.Cores, mem(ws.MemoryUsedMB), mem(ws.MemoryMB))
	if len(ws.Resources) > 0 {
		fmt.Fprintf(w, "Resources: %s\n", termtext.Escape(wire.DescribeTotals(ws.Resources)))
	}
	if len(st.Workers) < ws.Total {
		fmt.Fprintf(w, "(not listed: berth status --workers lists them all)\n")
	}
	section(w, fmt.Sprintf("Workers (%d)", len(st.Workers)), "ID\tADDRESS\tSTATE\tCORES\tMEMORY\tRESOURCES\tLAST HEARTBEAT\tLIMITS")
	var full []string
	for _, wk := range st.Workers {
		state := string(wk.State)
		if wk.DiskFull != "" {
			state += ", DISK FULL"
			full = append(full, fmt.Sprintf("  %s: %s", termtext.Escape(wk.ID), termtext.Escape(wk.DiskFull)))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%s/%s\t%s\t%s\t%s\n", termtext.Escape(wk.ID), termtext.Escape(wk.Address), termtext.Escape(state),
			wk.CoresUsed, wk.Cores, mem(wk.MemoryUsedMB), mem(wk.MemoryMB), termtext.Escape(wire.DescribeFree(wk.Resources)), ago(wk.LastHeartbeat, now),
			termtext.Escape(orDash(wk.Limits)))
	}
	if len(full) > 0 {
		fmt.Fprintf(w, "Disk full (nothing new is placed there):\n%s\n", strings.Join(full, "\n"))
	}
	printApps(w, "Active apps", st.ActiveApps)
	printApps(w, "Completed apps", st.CompletedApps)
	printDrivers(w, "Active drivers", st.ActiveDrivers)
	printDrivers(w, "Completed drivers", st.CompletedDrivers)
	return w.Flush()
}

func section(w io.Writer, title, header string) {
	fmt.Fprintf(w, "\n%s\n%s\n", title, header)
}

func printApps(w io.Writer, title string, apps []wire.AppStatus) {
	section(w, fmt.Sprintf("%s (%d)", title, len(apps)), "ID\tNAME\tSTATE\tCORES\tEXECUTORS\tQUEUE\tMESSAGE")
	for _, a := range apps {
		cores := fmt.Sprint(a.CoresGranted)
		if a.MaxCores > 0 {
			cores += fmt.Sprintf("/%d", a.MaxCores)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termtext.Escape(a.ID), termtext.Escape(a.Name), termtext.Escape(a.State), cores,
			executorsByState(a.Executors), inQueue(a.Queue, a.Priority), termtext.Escape(strings.TrimSpace(a.Waiting+" "+a.Message)))
	}
}

func printDrivers(w io.Writer, title string, drivers []wire.DriverStatus) {
	section(w, fmt.Sprintf("%s (%d)", title, len(drivers)), "ID\tSTATE\tWORKER\tCORES\tMEMORY\tQUEUE\tMESSAGE")
	for _, d := range drivers {
		msg := strings.TrimSpace(d.Waiting + " " + d.Message)
		if d.RelaunchedAs != "" {
			msg = strings.TrimSpace("relaunched as " + d.RelaunchedAs + " " + msg)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", termtext.Escape(d.ID), termtext.Escape(d.State), termtext.Escape(orDash(d.WorkerID)), d.Cores,
			mem(d.MemoryMB), inQueue(d.Queue, d.Priority), termtext.Escape(msg))
	}
}

// inQueue is an app's or a driver's queue, escaped, with its priority when
// it has one: "etl", "etl (priority 5)".
func inQueue(queue string, priority int) string {
	if queue == "" {
		queue = wire.DefaultQueue // what the master runs it in
	}
	if priority != 0 {
		queue += fmt.Sprintf(" (priority %d)", priority)
	}
	return termtext.Escape(queue)
}

// executorsByState counts an app's executors per state: "RUNNING:2 LOST:1",
// the states escaped (they come from the master).
func executorsByState(execs []wire.ExecutorStatus) string {
	if len(execs) == 0 {
		return "-"
	}
	n := map[wire.ExecutorState]int{}
	for _, e := range execs {
		n[e.State]++
	}
	states := make([]string, 0, len(n))
	for s := range n {
		states = append(states, string(s))
	}
	sort.Strings(states)
	for i, s := range states {
		states[i] = fmt.Sprintf("%s:%d", termtext.Escape(s), n[wire.ExecutorState(s)])
	}
	return strings.Join(states, " ")
}

// mem formats MiB the way --memory takes them.
func mem(mb int) string {
	switch {
	case mb >= 1024 && mb%1024 == 0:
		return fmt.Sprintf("%dg", mb/1024)
	case mb >= 1024:
		return fmt.Sprintf("%.1fg", float64(mb)/1024)
	}
	return fmt.Sprintf("%dm", mb)
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
