package chaos

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// report is the run's figures as markdown: failover per fault kind, then
// what was checked and what broke.
func report(results []faultResult, w *workload, lw *leaderWatch, v verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Fault-injection run, %s, %d CPUs (%s/%s)\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "| fault | n | back: p50 | p99 | max | after the election: p50 | max |\n|---|---:|---:|---:|---:|---:|---:|\n")
	var kinds []string
	byKind := map[string][]faultResult{}
	for _, r := range results {
		if _, ok := byKind[r.kind]; !ok {
			kinds = append(kinds, r.kind)
		}
		byKind[r.kind] = append(byKind[r.kind], r)
	}
	for _, k := range kinds {
		rs := byKind[k]
		var back, elect []time.Duration
		for _, r := range rs {
			back = append(back, r.failover)
			if r.sinceElection > 0 {
				elect = append(elect, r.sinceElection)
			}
		}
		e50, emax := "–", "–"
		if len(elect) > 0 {
			e50, emax = ms(quantile(elect, 0.5)), ms(quantile(elect, 1))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", k, len(rs), ms(quantile(back, 0.5)), ms(quantile(back, 0.99)), ms(quantile(back, 1)), e50, emax)
	}
	var more strings.Builder
	for _, k := range kinds {
		var names []string
		byName := map[string][]time.Duration{}
		isCount := map[string]bool{}
		for _, r := range byKind[k] {
			for _, m := range r.more {
				if _, ok := byName[m.name]; !ok {
					names = append(names, m.name)
				}
				byName[m.name] = append(byName[m.name], m.d)
				isCount[m.name] = m.count
			}
		}
		for _, n := range names {
			ds := byName[n]
			q := func(x float64) string { return measure{d: quantile(ds, x), count: isCount[n]}.String() }
			fmt.Fprintf(&more, "| %s | %s | %d | %s | %s | %s |\n", k, n, len(ds), q(0.5), q(0.99), q(1))
		}
	}
	if more.Len() > 0 {
		fmt.Fprintf(&b, "\nWhat else the faults measured (for a worker's outage, \"back\" above is from the fault until the worker was DEAD and %s RUNNING its %d executors on the other worker):\n\n", longApps[0].name, longApps[0].executors)
		fmt.Fprintf(&b, "| fault | measure | n | p50 | p99 | max |\n|---|---|---:|---:|---:|---:|\n%s", more.String())
	}
	answers, asLeader := lw.counts()
	w.mu.Lock()
	apps, drivers, doubt := len(w.apps), len(w.drivers), w.doubt
	bursts := 0
	for _, t := range w.apps {
		if t.burst != nil {
			bursts++
		}
	}
	w.mu.Unlock()
	fmt.Fprintf(&b, "\n\"back\": from the fault to a leader ALIVE with both workers ALIVE, %s RUNNING its %d executors and %d more long-running apps' clients answered (their executors may be preempted).\n\n",
		longApps[0].name, longApps[0].executors, len(longApps)-1)
	fmt.Fprintf(&b, "- operations checked: %d (%s), linearizable: %s\n", v.checked, opCounts(w), v.linearizable)
	fmt.Fprintf(&b, "- acknowledged writes: %d, lost: %d; apps %d (%d of them tenants' bursts), drivers %d, submissions left in doubt: %d; requests a tenant may not make: %d\n",
		v.acked, len(v.lost), apps, bursts, drivers, doubt, w.probes.Load())
	fmt.Fprintf(&b, "- audit log: %d entries lined up from %d answers of the masters (the same on every master at the end: %v); acknowledged writes matched with their entries: %d; refusals under a steady leader audited: %d of %d (%d more around a leader change, not required); deletes answered as done whose retry found the queue or tenant gone (404 recorded, no ok): %d\n",
		v.audit.entries, v.audit.answers, v.audit.final, v.audit.checked, v.audit.refusalsSeen, v.audit.refusals, v.audit.refusalsElse, v.audit.deletesFoundGone)
	fmt.Fprintf(&b, "- executors preempted: %d, of them decided during a fault: %d\n", v.preempted, v.inFaults)
	fmt.Fprintf(&b, "- answers 503 disk_full the workload's clients were given and retried: %d; drivers ended with their worker: %d\n", v.diskFull, v.driversLost)
	fmt.Fprintf(&b, "- masters' views sampled: %d, %d of them as the leader\n", answers, asLeader)
	fmt.Fprintf(&b, "- problems: %d\n", len(v.problems))
	for _, p := range v.problems {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	return b.String()
}

func opCounts(w *workload) string {
	var parts []string
	for k := opRegister; k <= lastOp; k++ {
		if v, ok := w.counts.Load(k); ok {
			parts = append(parts, fmt.Sprintf("%s %d", k, v.(*atomic.Int64).Load()))
		}
	}
	return strings.Join(parts, ", ")
}

// quantile is the q-quantile (nearest rank) of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
