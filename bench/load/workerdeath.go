package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/internal/poll"
)

// killOne kills one worker holding executors of the app, measures, and
// brings it back.
func killOne(ctx context.Context, proc *masterProc, f *fleet, events *eventLog, appID string, p *lossParams, timeout time.Duration, rng *rand.Rand) (rep lossRep) {
	if !poll.Within(ctx, time.Duration(p.RepTimeout), pollEvery, func() bool { return appSettled(f, appID, p.AppCores) }) {
		cores, _ := f.appCores(appID)
		rep.Err = fmt.Sprintf("the app held %d of %d cores before the kill", cores, p.AppCores)
		return rep
	}
	_, holders := f.appCores(appID)
	if len(holders) == 0 {
		rep.Err = "no worker holds executors"
		return rep
	}
	victim := holders[rng.IntN(len(holders))]
	rep.Victim = victim.id
	rep.LostCores = victim.coresOf(appID)
	evIdx := events.len()
	launchIdx, ackIdx := f.counts()

	lastHB := time.Unix(0, victim.lastOK.Load())
	tKill := time.Now()
	victim.kill()
	rep.SinceHeartbeatMs = benchstat.Ms(tKill.Sub(lastHB))
	defer func() {
		if err := victim.revive(ctx); err != nil && rep.Err == "" {
			rep.Err = "reviving: " + err.Error()
		}
		poll.Sleep(ctx, time.Duration(p.Settle))
	}()

	var tDead time.Time
	if !poll.Within(ctx, 3*timeout+time.Duration(p.RepTimeout), pollEvery, func() bool {
		if lost := events.lost(evIdx, victim.id); len(lost) > 0 {
			tDead = lost[0].At
			return true
		}
		return false
	}) {
		rep.Err = fmt.Sprintf("%s was not declared DEAD within %s", victim.id, 3*timeout+time.Duration(p.RepTimeout))
		return rep
	}
	rep.DeadFrom = "stream"
	if proc != nil {
		if at, ok := proc.logTime("removing worker", victim.id, tKill); ok {
			rep.DeadFrom, rep.StreamLagMs = "master log", benchstat.Ms(tDead.Sub(at))
			tDead = at
		}
	}
	rep.KillToDeadMs = benchstat.Ms(tDead.Sub(tKill))
	// The last heartbeat the master took, from its own record (a heartbeat
	// in flight at the kill may have reached it after the tool stopped
	// listening); the tool's last acknowledged one if the master's is not
	// listed.
	rep.LastHeartbeatFrom = "tool"
	if cs, err := f.mc.cluster(ctx); err == nil {
		for _, ws := range cs.Workers {
			if ws.ID == victim.id && !ws.LastHeartbeat.IsZero() {
				lastHB, rep.LastHeartbeatFrom = ws.LastHeartbeat, "master"
				rep.SinceHeartbeatMs = benchstat.Ms(tKill.Sub(lastHB))
			}
		}
	}
	rep.HeartbeatToDeadMs = benchstat.Ms(tDead.Sub(lastHB))

	// Replacements: launches of the app on other workers since the kill,
	// until their cores cover what was lost.
	var replaced []launchRec
	var tAll time.Time
	placed := poll.Within(ctx, time.Duration(p.RepTimeout), pollEvery, func() bool {
		replaced, tAll = replaced[:0], time.Time{}
		cores := 0
		for _, l := range f.launchesSince(launchIdx) {
			if l.AppID != appID || l.Worker == victim.n {
				continue
			}
			replaced = append(replaced, l)
			cores += l.Cores
			if cores >= rep.LostCores && tAll.IsZero() {
				tAll = l.At
			}
		}
		return !tAll.IsZero()
	})
	rep.LostExecutors = len(events.lost(evIdx, victim.id))
	if len(replaced) > 0 {
		rep.DeadToFirstMs = benchstat.Ms(replaced[0].At.Sub(tDead))
	}
	if !placed {
		rep.Err = fmt.Sprintf("%d of %d lost cores placed again within %s", sumCores(replaced), rep.LostCores, p.RepTimeout)
		return rep
	}
	rep.DeadToAllMs = benchstat.Ms(tAll.Sub(tDead))
	for _, l := range replaced {
		rep.Replacements++
		rep.ReplacementCores += l.Cores
	}
	want := map[execKey]bool{}
	for _, l := range replaced {
		want[execKey{l.AppID, l.ExecID}] = true
	}
	var tRun time.Time
	if !poll.Within(ctx, time.Duration(p.RepTimeout), pollEvery, func() bool {
		seen := 0
		for _, a := range f.acksSince(ackIdx) {
			if want[execKey{a.AppID, a.ExecID}] {
				seen++
				if a.At.After(tRun) {
					tRun = a.At
				}
			}
		}
		return seen == len(want)
	}) {
		rep.Err = "the replacements' RUNNING reports were not all accepted"
		return rep
	}
	rep.DeadToRunningMs = benchstat.Ms(tRun.Sub(tDead))
	return rep
}

func sumCores(ls []launchRec) int {
	n := 0
	for _, l := range ls {
		n += l.Cores
	}
	return n
}

func workerLossTables(r *Report, res *lossResults, timeout time.Duration) {
	reps := table{Name: "reps", Title: "worker deaths (ms)", Header: []string{
		"rep", "victim", "lost exec", "lost cores", "hb→kill", "kill→DEAD", "hb→DEAD", "DEAD from", "stream lag", "DEAD→first", "DEAD→all", "DEAD→running", "replacements", "error"}}
	series := map[string][]time.Duration{}
	order := []string{"kill→DEAD", "kill→DEAD − timeout", "last hb→DEAD − timeout", "DEAD→first launch", "DEAD→all launched", "DEAD→all running"}
	d := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for _, rp := range res.Reps {
		reps.add(rp.Rep, rp.Victim, rp.LostExecutors, rp.LostCores, rp.SinceHeartbeatMs, rp.KillToDeadMs, rp.HeartbeatToDeadMs, rp.DeadFrom, rp.StreamLagMs,
			rp.DeadToFirstMs, rp.DeadToAllMs, rp.DeadToRunningMs, fmt.Sprintf("%d (%d cores)", rp.Replacements, rp.ReplacementCores), rp.Err)
		if rp.Err != "" {
			continue
		}
		series[order[0]] = append(series[order[0]], d(rp.KillToDeadMs))
		series[order[1]] = append(series[order[1]], d(rp.KillToDeadMs)-timeout)
		series[order[2]] = append(series[order[2]], d(rp.HeartbeatToDeadMs)-timeout)
		series[order[3]] = append(series[order[3]], d(rp.DeadToFirstMs))
		series[order[4]] = append(series[order[4]], d(rp.DeadToAllMs))
		series[order[5]] = append(series[order[5]], d(rp.DeadToRunningMs))
	}
	sum := table{Name: "summary", Title: fmt.Sprintf("summary over the repetitions (ms; worker timeout %s)", timeout),
		Header: []string{"measure", "n", "min", "median", "p99", "max"}}
	for _, k := range order {
		s := benchstat.Summarize(series[k])
		res.Summary[k] = s
		sum.add(k, s.N, s.Min, s.P50, s.P99, s.Max)
	}
	r.Tables = append(r.Tables, reps, sum)
	ok := res.Summary[order[0]].N
	r.Verdict = append(r.Verdict,
		fmt.Sprintf("%d of %d worker deaths measured; false expiries of other workers: %d", ok, len(res.Reps), res.FalseExpiries),
		fmt.Sprintf("worker death → DEAD: median %.0f ms, p99 %.0f ms (timeout %s; detection beyond the timeout, from the last heartbeat: median %.0f ms, p99 %.0f ms)",
			res.Summary[order[0]].P50, res.Summary[order[0]].P99, timeout, res.Summary[order[2]].P50, res.Summary[order[2]].P99),
		fmt.Sprintf("DEAD → replacement executors launched: median %.2f ms, p99 %.2f ms (RUNNING accepted: median %.2f ms, p99 %.2f ms)",
			res.Summary[order[4]].P50, res.Summary[order[4]].P99, res.Summary[order[5]].P50, res.Summary[order[5]].P99))
}
