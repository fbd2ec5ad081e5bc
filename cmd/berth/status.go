package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
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
			&cli.BoolFlag{Name: "completed", Value: true, EnvVars: env("status", "completed"),
				Usage: "list the completed apps and drivers (--completed=false leaves them out, as the API's ?completed=false)"},
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
			q := client.ClusterQuery{NoCompleted: !c.Bool("completed")}
			if c.Bool("workers") {
				st, err = cl.LeaderClusterQuery(ctx, q)
			} else if st, err = cl.LeaderClusterQuery(ctx, client.ClusterQuery{NoWorkers: true, NoCompleted: q.NoCompleted}); err == nil && st.WorkerSummary.Total <= listedWorkers {
				st, err = cl.LeaderClusterQuery(ctx, q) // few enough to list
			}
			if err != nil {
				return err
			}
			st.Masters = sortedMasters(st.Masters)
			if q.NoCompleted {
				st.CompletedApps, st.CompletedDrivers = nil, nil // said left out, not none
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
	printMasters(w, st, now) // statustruth.go
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
	labelled := slices.ContainsFunc(st.Workers, func(wk wire.WorkerStatus) bool { return len(wk.Labels) > 0 })
	header := "ID\tADDRESS\tSTATE\tCORES\tMEMORY\tRESOURCES\tLAST HEARTBEAT\tLIMITS"
	if labelled { // a column only where some worker has labels (constraints)
		header += "\tLABELS"
	}
	section(w, fmt.Sprintf("Workers (%d)", len(st.Workers)), header)
	var full, unhealthy []string
	for _, wk := range st.Workers {
		state := string(wk.State)
		if wk.DiskFull != "" {
			state += ", DISK FULL"
			full = append(full, fmt.Sprintf("  %s: %s", termtext.Escape(wk.ID), termtext.Escape(wk.DiskFull)))
		}
		if wk.Unhealthy != "" {
			state += ", UNHEALTHY"
			since := ""
			if wk.UnhealthySince != nil {
				since = fmt.Sprintf(" since %s (%s)", clock(*wk.UnhealthySince, now), ago(*wk.UnhealthySince, now))
			}
			unhealthy = append(unhealthy, fmt.Sprintf("  %s%s: %s", termtext.Escape(wk.ID), since, termtext.Escape(wk.Unhealthy)))
		}
		labels := ""
		if labelled {
			labels = "\t" + termtext.Escape(orDash(wire.LabelList(wk.Labels)))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%s/%s\t%s\t%s\t%s%s\n", termtext.Escape(wk.ID), termtext.Escape(wk.Address), termtext.Escape(state),
			wk.CoresUsed, wk.Cores, mem(wk.MemoryUsedMB), mem(wk.MemoryMB), termtext.Escape(wire.DescribeFree(wk.Resources)), ago(wk.LastHeartbeat, now),
			termtext.Escape(orDash(wk.Limits)), labels)
	}
	if len(full) > 0 {
		fmt.Fprintf(w, "Disk full (nothing new is placed there):\n%s\n", strings.Join(full, "\n"))
	}
	if len(unhealthy) > 0 {
		fmt.Fprintf(w, "Unhealthy (nothing new is placed there until it passes or berth worker clear ID):\n%s\n", strings.Join(unhealthy, "\n"))
	}
	printApps(w, "Active apps", st.ActiveApps)
	printExclusions(w, st.ActiveApps, now)
	printCheckedExecutors(w, st.ActiveApps)
	if st.CompletedApps != nil { // nil: left out (--completed=false)
		printApps(w, "Completed apps", st.CompletedApps)
	}
	printDrivers(w, "Active drivers", st.ActiveDrivers)
	if st.CompletedDrivers != nil {
		printDrivers(w, "Completed drivers", st.CompletedDrivers)
	}
	return w.Flush()
}

// uiOf is " UI <its own web UI>" for an app that gave one (a Spark
// driver's), "" otherwise.
func uiOf(a wire.AppStatus) string {
	if a.UIURL == "" || a.State.Finished() {
		return ""
	}
	return " UI " + a.UIURL
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
			executorsByState(a.Executors), inQueue(a.Queue, a.Priority), termtext.Escape(strings.TrimSpace(a.Waiting+" "+a.Message+uiOf(a))))
	}
}

// printDrivers lists drivers; with HEALTH and PORTS columns when one of
// them has ports or checks.
func printDrivers(w io.Writer, title string, drivers []wire.DriverStatus) {
	checked := slices.ContainsFunc(drivers, func(d wire.DriverStatus) bool { return len(d.Ports) > 0 || d.Health != "" })
	header := "ID\tNAME\tSTATE\tWORKER\tCORES\tMEMORY\tQUEUE\tMESSAGE"
	if checked {
		header = "ID\tNAME\tSTATE\tWORKER\tCORES\tMEMORY\tQUEUE\tHEALTH\tPORTS\tMESSAGE"
	}
	section(w, fmt.Sprintf("%s (%d)", title, len(drivers)), header)
	for _, d := range drivers {
		msg := strings.TrimSpace(d.Waiting + " " + d.Message)
		if d.RelaunchedAs != "" {
			msg = strings.TrimSpace("relaunched as " + d.RelaunchedAs + " " + msg)
		}
		health := ""
		if checked {
			health = termtext.Escape(orDash(string(d.Health))) + "\t" + termtext.Escape(formatPorts(d.Ports)) + "\t"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s%s\n", termtext.Escape(d.ID), termtext.Escape(orDash(d.Name)), termtext.Escape(d.State), termtext.Escape(orDash(d.WorkerID)), d.Cores,
			mem(d.MemoryMB), inQueue(d.Queue, d.Priority), health, termtext.Escape(msg))
	}
}

// printExclusions lists the workers the apps' executors are kept off, if
// any: "app-1  kept off w3 until 14:05:10 (in 9m50s): 2 executors failed
// there ...".
func printExclusions(w io.Writer, apps []wire.AppStatus, now time.Time) {
	var lines []string
	for _, a := range apps {
		for _, x := range a.Excluded {
			lines = append(lines, fmt.Sprintf("  %s kept off %s until %s (in %s): %s", termtext.Escape(a.ID), termtext.Escape(x.WorkerID),
				clock(x.Until, now), max(x.Until.Sub(now), 0).Round(time.Second), termtext.Escape(x.Reason)))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "Exclusions (berth worker clear ID ends a worker's):\n%s\n", strings.Join(lines, "\n"))
	}
}

// listedExecutors: berth status lists at most this many executors with
// ports or checks (berth app ID has them all).
const listedExecutors = 50

// printCheckedExecutors lists the executors of the apps that ask for ports
// or checks: their worker, state, health and ports. Those that run come
// first; the ended ones after (an unhealthy one ended FAILED).
func printCheckedExecutors(w io.Writer, apps []wire.AppStatus) {
	type row struct {
		app string
		e   wire.ExecutorStatus
	}
	var live, ended []row
	for _, a := range apps {
		for _, e := range a.Executors {
			if len(e.Ports) == 0 && e.Health == "" {
				continue
			}
			if e.State.Finished() {
				ended = append(ended, row{a.ID, e})
			} else {
				live = append(live, row{a.ID, e})
			}
		}
	}
	rows := append(live, ended...)
	if len(rows) == 0 {
		return
	}
	section(w, fmt.Sprintf("Executors with ports or checks (%d)", len(rows)), "APP\tEXECUTOR\tWORKER\tSTATE\tHEALTH\tPORTS")
	for i, r := range rows {
		if i == listedExecutors {
			fmt.Fprintf(w, "(%d more: berth app ID lists an app's)\n", len(rows)-i)
			break
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", termtext.Escape(r.app), r.e.ID, termtext.Escape(orDash(r.e.WorkerID)),
			termtext.Escape(r.e.State), termtext.Escape(orDash(string(r.e.Health))), termtext.Escape(formatPorts(r.e.Ports)))
	}
}

// formatPorts is a process's ports by label, "http=20001,admin=20002"
// (sorted by label; not escaped), or "-".
func formatPorts(ports map[string]int) string {
	if len(ports) == 0 {
		return "-"
	}
	pairs := make([]string, 0, len(ports))
	for _, label := range slices.Sorted(maps.Keys(ports)) {
		pairs = append(pairs, fmt.Sprintf("%s=%d", label, ports[label]))
	}
	return strings.Join(pairs, ",")
}

// clock is t in now's zone: its time of day when on now's day, else its
// date and time.
func clock(t, now time.Time) string {
	t = t.In(now.Location())
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
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
