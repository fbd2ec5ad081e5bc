package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/bench/internal/benchtool"
	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

type ffParams struct {
	Workers       int      `json:"workers"`
	WorkerTimeout duration `json:"workerTimeout"`
	RaftProfile   string   `json:"raftProfile"`
	WorkerCores   int      `json:"workerCores"`
	WorkerMemMB   int      `json:"workerMemoryMB"`
	rampParams
	AliveTimeout duration `json:"aliveTimeout"`
}

func readFleetFailoverParams(c *cli.Context) (*ffParams, error) {
	p := &ffParams{
		Workers: c.Int("workers"), WorkerTimeout: duration(c.Duration("worker-timeout")), RaftProfile: c.String("raft-profile"),
		WorkerCores: c.Int("worker-cores"), WorkerMemMB: c.Int("worker-memory-mb"), rampParams: readRampParams(c),
		AliveTimeout: duration(c.Duration("alive-timeout")),
	}
	if p.Workers <= 0 || p.WorkerTimeout <= 0 || p.RegParallel <= 0 || p.RampTimeout <= 0 || p.AliveTimeout <= 0 {
		return nil, fmt.Errorf("--workers, --worker-timeout, --register-parallel, --ramp-timeout and --alive-timeout must be positive")
	}
	if c.String("master") != "" {
		return nil, fmt.Errorf("--master: fleet-failover starts its own three masters (give --master-bin)")
	}
	return p, nil
}

// ffRow is the one failover measured.
type ffRow struct {
	Workers    int     `json:"workers"`
	IntervalMs float64 `json:"intervalMs"`
	rampResult
	KilledID        string  `json:"killed"`
	ToLeaderMs      float64 `json:"toLeaderMs"`      // kill → a master leads at a higher epoch
	ToAliveMs       float64 `json:"toAliveMs"`       // kill → that leader ALIVE (recovery over)
	ToAllWorkersMs  float64 `json:"toAllWorkersMs"`  // kill → every worker ALIVE at the new leader
	Reregistrations int64   `json:"reregistrations"` // the workers' registrations again after the kill
	HeartbeatErrors int64   `json:"heartbeatErrors"`
	NotAlive        int     `json:"notAlive"` // workers not ALIVE at the end
	FalseExpiries   int64   `json:"falseExpiries"`
	LeaderRSSMB     float64 `json:"leaderRssMB"`
	fleetOutcome
}

const fleetFailoverDescription = `Three masters replicating through Raft (TLS, as Raft runs only over it; on
127.0.0.1-3) with --worker-timeout and --raft-profile, and W simulated workers
registered with them: once every worker heartbeats at the interval the
master set for W, SIGKILL the leader and time, from the kill, until another
master leads at a higher epoch, until it is ALIVE (its recovery over: every
worker answered it), and until it has all W workers ALIVE. The workers look
for the leader as real ones do when their master dies: their next heartbeat
fails and they register again through whichever master answers (a follower
names the leader). They register an https address without listening there
(no file descriptor each): the new leader's Reconnect to each of them is
refused, so each worker finds it through its own heartbeat schedule, as a
worker does whose reconnect was lost.`

func fleetFailoverCommand(out io.Writer) *cli.Command {
	return measure[*ffParams]{
		name:        "fleet-failover",
		usage:       "SIGKILL the leader of three masters holding W workers: time until ALIVE with every worker back",
		description: fleetFailoverDescription,
		flags: slices.Concat([]cli.Flag{
			&cli.IntFlag{Name: "workers", Value: 10000, Usage: "simulated workers"},
			&cli.DurationFlag{Name: "worker-timeout", Value: 60 * time.Second, Usage: "masters' --worker-timeout"},
			&cli.StringFlag{Name: "raft-profile", Value: "lan", Usage: "masters' --raft-profile"},
			&cli.IntFlag{Name: "worker-cores", Value: 8, Usage: "cores each worker announces"},
			&cli.IntFlag{Name: "worker-memory-mb", Value: 16384, Usage: "memory each worker announces"},
		}, rampFlags(6*time.Minute, ""), []cli.Flag{
			&cli.DurationFlag{Name: "alive-timeout", Value: 5 * time.Minute, Usage: "bound on the wait for a new ALIVE leader with every worker"},
		}),
		params: readFleetFailoverParams,
		run:    runFleetFailover,
	}.command(out)
}

func runFleetFailover(ctx context.Context, cm *common, p *ffParams, r *Report) error {
	row := ffRow{Workers: p.Workers, LeaderRSSMB: -1}
	err := fleetFailover(ctx, cm, p, r, &row)
	r.Results = []ffRow{row}
	t := table{Name: "fleet-failover", Title: "kill -9 of the leader (ms from the kill)",
		Header: []string{"workers", "interval", "registered in s", "reg/s", "→ leader", "→ ALIVE", "→ all workers ALIVE", "re-registrations", "heartbeat errors", "not ALIVE", "false expiries", "leader RSS MB"}}
	t.add(row.Workers, row.IntervalMs, row.RegisterSeconds, row.RegistrationsSec, row.ToLeaderMs, row.ToAliveMs, row.ToAllWorkersMs,
		row.Reregistrations, row.HeartbeatErrors, row.NotAlive, row.FalseExpiries, row.LeaderRSSMB)
	r.Tables = append(r.Tables, t)
	if err == nil {
		r.Verdict = append(r.Verdict, fmt.Sprintf("a new leader was ALIVE with all %d workers %.1f s after the kill", row.Workers, row.ToAllWorkersMs/1000))
	}
	return err
}

func fleetFailover(ctx context.Context, cm *common, p *ffParams, r *Report, row *ffRow) error {
	if cm.masterBin == "" {
		return errors.New("--master-bin: fleet-failover starts three masters")
	}
	secret := cmp.Or(cm.secret, benchtool.Secret())
	dir := filepath.Join(cm.workDir, "fleet-failover")
	pki, err := testcluster.NewPKI(filepath.Join(dir, "tls"))
	if err != nil {
		return err
	}
	flags := append([]string{"--worker-timeout", p.WorkerTimeout.String(), "--raft-profile", p.RaftProfile, "--log-format", "json"}, cm.masterArgs...)
	cl, err := testcluster.StartCluster(cm.host, testcluster.Options{
		Bin: testcluster.Binaries{Master: cm.masterBin, PKI: pki}, Dir: dir, Secret: secret, Masters: 3, MasterFlags: flags,
	})
	if err != nil {
		return fmt.Errorf("starting three masters: %w", err)
	}
	tlsConf, err := client.MasterTLS(pki.CAFile())
	if err != nil {
		return err
	}
	bin := binaryInfo(cm.masterBin) // one binary: hashed once
	for _, m := range cl.Masters {
		info := bin
		info.URL, info.MasterID, info.Args = m.URL, m.ID, flags
		r.Masters = append(r.Masters, info)
	}
	mc := newClusterClient(cl.URLs(), secret, tlsConf, cm.inFlight, cm.reqTimeout)
	f, err := newFleet(fleetConfig{
		Workers: p.Workers, Cores: p.WorkerCores, MemoryMB: p.WorkerMemMB, IDPrefix: cm.idPrefix, PortBase: cm.portBase,
		Secret: secret, Seed: cm.seed, NoListen: true, Scheme: "https", FollowLeader: true,
	}, mc)
	if err != nil {
		return err
	}
	defer func() {
		row.Fleet = f.snapshot()
		r.Problems = append(r.Problems, fleetProblems(f)...)
		mc.closeIdle()
		f.close()
	}()
	if row.rampResult, err = f.ramp(ctx, p.rampParams); err != nil {
		return err
	}
	fmt.Fprintf(cm.out, "  %d workers registered in %.1f s\n", p.Workers, row.RegisterSeconds)

	// Every worker heartbeats at the interval set for the whole fleet
	// before the kill: wait one interval past the last registration.
	status := pki.TLSClient(secret, 5*time.Second)
	var before wire.ClusterStatus
	var leader *testcluster.Master
	interval := time.Duration(f.ws[0].interval.Load())
	if !poll.Sleep(ctx, interval+time.Second) {
		return ctx.Err()
	}
	row.IntervalMs = benchstat.Ms(time.Duration(f.ws[0].interval.Load()))
	for _, m := range cl.Masters {
		if st, err := summary(ctx, status, m); err == nil && st.View == wire.ViewLeader && st.Status == wire.MasterAlive {
			leader, before = m, st
		}
	}
	if leader == nil || before.WorkerSummary.Alive != p.Workers {
		return fmt.Errorf("before the kill: leader %v, %d of %d workers ALIVE", leader != nil, before.WorkerSummary.Alive, p.Workers)
	}
	row.KilledID = leader.ID
	reg0, exp0 := f.n.followed.Load(), f.n.reregistered.Load()
	hb0 := f.n.hbErrors.Load()
	fmt.Fprintf(cm.out, "  killing leader %s (epoch %d) with %d workers ALIVE\n", leader.ID, before.Epoch, before.WorkerSummary.Alive)
	t0 := time.Now()
	leader.Proc().Kill()

	deadline := t0.Add(time.Duration(p.AliveTimeout))
	var newLeader *testcluster.Master
	for time.Now().Before(deadline) {
		for _, m := range cl.Masters {
			if m == leader {
				continue
			}
			st, err := summary(ctx, status, m)
			if err != nil || st.View != wire.ViewLeader || st.Epoch <= before.Epoch {
				continue
			}
			ms := benchstat.Ms(time.Since(t0))
			if row.ToLeaderMs == 0 {
				row.ToLeaderMs, newLeader = ms, m
			}
			if st.Status == wire.MasterAlive && row.ToAliveMs == 0 {
				row.ToAliveMs = ms
			}
			if st.Status == wire.MasterAlive && st.WorkerSummary.Alive == p.Workers && row.ToAllWorkersMs == 0 {
				row.ToAllWorkersMs = ms
			}
			row.NotAlive = p.Workers - st.WorkerSummary.Alive
		}
		if row.ToAllWorkersMs > 0 || !poll.Sleep(ctx, 50*time.Millisecond) {
			break
		}
	}
	row.Reregistrations, row.FalseExpiries = f.n.followed.Load()-reg0, f.n.reregistered.Load()-exp0
	row.HeartbeatErrors = f.n.hbErrors.Load() - hb0
	if newLeader != nil {
		row.LeaderRSSMB = rssMB(newLeader.Proc().Pid())
	}
	if row.ToAllWorkersMs == 0 {
		return fmt.Errorf("no ALIVE leader with all %d workers within --alive-timeout %s (leader after %.0f ms, ALIVE after %.0f ms, %d not ALIVE)",
			p.Workers, p.AliveTimeout, row.ToLeaderMs, row.ToAliveMs, row.NotAlive)
	}
	return nil
}

// summary reads one master's own view without the workers' list.
func summary(ctx context.Context, c *httpx.Client, m *testcluster.Master) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	r := summaryRequest()
	err := c.Do(ctx, r.method, m.URL+r.path, nil, &st)
	return st, err
}
