// Package chaos checks berth's failover promises from the outside: a real
// three-master cluster with workers, shared by queues (weights, a
// guarantee, a limit, one that may not be preempted) and tenants; a
// concurrent workload of submissions, kills, reads and limit changes
// under idempotency keys, by the operator and by the tenants in their
// queues (and requests they may not make), the operator's writes of
// queues and tenants, reads of both; long-running apps whose clients stay
// connected and whose executor pids are watched, spread over queues, and
// tenants' bursts that the master preempts for; and faults injected one
// after another: kill -9, SIGTERM handover, SIGSTOP shorter and longer
// than every timeout, kill -9 of a follower, an asymmetric partition of
// the leader's Raft traffic (nftables), a restart of each master, a power
// loss of every master at once, the leader's and a follower's disk
// filling up (a small tmpfs each), a worker frozen and a worker cut off
// from the masters (nftables) for longer than the worker timeout; and,
// between two faults, a follower restarted, so that the next fault meets
// connections pooled to its previous process. The whole history is
// checked with porcupine for linearizability; and every acknowledged
// write must still be there and be in the audit log (which every master
// must answer alike), no refused write be recorded as done, every watched
// executor keep its pid unless preempted (once, saying why) or lost with
// its worker (and then be replaced, its copy killed once the worker is
// back, never counted twice), every client stay alive, no two masters
// answer as the leader at once, and no daemon panic.
//
// `go test ./e2e/chaos` runs one fault of each kind; `make chaos` runs 100
// and prints the report (-chaos.faults, -chaos.report).
package chaos

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testcluster"
)

var (
	faultsFlag   = flag.Int("chaos.faults", len(faultKinds), "faults to inject, round robin over the kinds")
	reportFlag   = flag.String("chaos.report", "", "also write the report (markdown) to this file")
	onlyFlag     = flag.String("chaos.only", "", "inject only the fault kinds whose name contains this (or any of these, comma-separated)")
	keepFlag     = flag.Bool("chaos.keep", false, "keep the cluster's logs and data even if the run passes")
	debugFlag    = flag.Bool("chaos.debug", false, "run the masters with --log-level debug (Raft's messages included)")
	restartsFlag = flag.Bool("chaos.restarts", true, "restart a follower between two faults (SIGTERM and kill -9 in turn)")
)

var bin testcluster.Binaries

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "berth-chaos-bin-")
	if err == nil {
		bin, err = testcluster.Build("../..", dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	secret    = "chaos-secret"
	workloads = 4
)

// The cluster's timeouts (masterFlags), short so that every freeze can be
// longer than all of them (see faults_test.go); preemption's, short so
// that the bursts are preempted for while the faults go on.
const (
	workerTimeout   = 8 * time.Second
	recoveryTimeout = 4 * time.Second
	appTimeout      = 10 * time.Second
	preemptionDelay = 2 * time.Second
	preemptionGrace = time.Second
)

// chaos is one run: the cluster, what watches it, and the results.
type chaos struct {
	t      *testing.T
	cl     *testcluster.Cluster
	cut    *testcluster.NetCut // nil when no partition can be made here
	cutErr error
	// disksErr says why the masters' data directories are not each on a
	// small file system of its own (nil: they are, and can be filled).
	disksErr error
	// workerDisksErr: the same for the workers' work directories.
	workerDisksErr error
	long           []*longApp
	marker         string // every process of this run's apps and drivers has it on its command line
	watch          *pidWatch
	faults         [][2]time.Time // when each fault began and the cluster was restored
	// outs are the workers' outages (worker freeze, worker cut).
	outs []*workerOut
	// diskFull counts the answers 503 disk_full the workload's clients
	// were given (and retried).
	diskFull atomic.Int64
}

// longApp is an app whose `berth run` client stays connected all along. A
// strict one's executors (its queue may not be preempted) must never be
// killed; the others' only by preemption.
type longApp struct {
	name, marker string
	queue        string
	priority     int
	executors    int // of one core each
	strict       bool
	id           string
	client       *testcluster.Proc
}

// The long-running apps: long-1 in steady, never preempted; long-2 and
// long-3 take what batch can get, and give it back.
var longApps = []longApp{
	{name: "long-1", queue: "steady", executors: 2, strict: true},
	{name: "long-2", queue: "batch", executors: 5},
	{name: "long-3", queue: "batch", executors: 5, priority: 1},
}

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault-injection run takes minutes")
	}
	dir, err := os.MkdirTemp("", "berth-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // masters run as other users
	t.Cleanup(func() {
		if !t.Failed() && !*keepFlag {
			os.RemoveAll(dir)
		} else {
			t.Logf("logs kept in %s", dir)
		}
	})
	ch := &chaos{t: t}
	var uids []uint32
	workers := []testcluster.WorkerSpec{{Cores: 8, Memory: "4g"}, {Cores: 8, Memory: "4g"}}
	if ch.cut, ch.cutErr = testcluster.NewNetCut(t); ch.cutErr == nil {
		uids = []uint32{64101, 64102, 64103}
		workers[1].UID = cutWorkerUID // the worker that can be cut off (worker cut)
	}
	ch.disksErr = mountSmallDisks(t, dir, 3)
	ch.workerDisksErr = mountWorkerDisks(t, dir, "w1", "w2")
	masterFlags := []string{
		"--worker-timeout", workerTimeout.String(), "--recovery-timeout", recoveryTimeout.String(),
		"--app-timeout", appTimeout.String(), "--retained-apps", "100000", "--retained-drivers", "100000",
		"--preemption-delay", preemptionDelay.String(), "--preemption-grace", preemptionGrace.String(),
		// Snapshots are taken, but no log entry is dropped after one: the
		// Raft log only grows, so that a full disk fails the next write
		// (bolt would otherwise reuse the pages of dropped entries, and a
		// leader whose disk filled could go on for minutes).
		"--raft-trailing-logs", "10000000",
	}
	if *debugFlag {
		masterFlags = append(masterFlags, "--log-level", "debug")
	}
	ch.cl, err = testcluster.StartCluster(t, testcluster.Options{
		Bin: bin, Dir: dir, Secret: secret, Masters: 3, UIDs: uids, MasterFlags: masterFlags, Workers: workers,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Markers tell this run's processes apart; sleep adds up its
	// arguments, so they are numbers (a fraction of a second more).
	marker := fmt.Sprintf("0.0%d", os.Getpid())
	ch.marker = marker
	t.Cleanup(func() { killMarked(marker) })
	pw := newPidWatch()
	ch.watch = pw
	pw.setWorkers(ch.cl.Workers)
	w := &workload{rec: &recorder{start: time.Now()}, marker: marker + "9", burstMarker: marker + "8", watch: pw,
		operator: &actor{by: operator}}
	for _, m := range ch.cl.Masters {
		w.masters = append(w.masters, m.ID)
	}
	for i := range workloads {
		w.operator.clients = append(w.operator.clients, ch.client(i, client.WithLogger(slog.New(&diskFullCounter{n: &ch.diskFull}))))
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	tokens, err := w.setupShared(sctx)
	scancel()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sharedTenants {
		a := &actor{tenant: st.name, by: "tenant:" + st.name, queues: st.queues, bursts: st.bursts}
		for i := range workloads {
			a.clients = append(a.clients, ch.clientAs(i, "", client.WithToken(tokens[st.name]), client.WithLogger(slog.New(&diskFullCounter{n: &ch.diskFull}))))
		}
		for _, m := range ch.cl.Masters {
			c, err := client.New([]string{m.URL}, "", client.WithToken(tokens[st.name]), client.WithRequestTimeout(2*time.Second),
				client.WithRetryBudget(5*time.Second), ch.cl.PKI.ClientOption())
			if err != nil {
				t.Fatal(err)
			}
			a.pinned = append(a.pinned, c)
		}
		w.tenants = append(w.tenants, a)
	}
	ch.startLongApps(dir, marker, pw)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	lw := &leaderWatch{}
	aw := newAuditWatch(ch)
	spawn := func(fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn()
		}()
	}
	// The leaders are watched until the final checks are done: a refusal
	// made then under a steady leader must be audited.
	lctx, lstop := context.WithCancel(context.Background())
	defer lstop()
	lwDone := make(chan struct{})
	go func() {
		defer close(lwDone)
		lw.run(lctx, ch.cl)
	}()
	spawn(func() { pw.run(ctx) })
	spawn(func() { pw.watchStatus(ctx, ch.client(workloads+1, client.WithRequestTimeout(time.Second))) })
	spawn(func() { aw.run(ctx) })
	// The leases are kept until the final reads are done: apps the
	// workload registered last and never killed would end by their lease
	// while the bursts are killed after the run, and the history has no
	// operation for that.
	kctx, kstop := context.WithCancel(context.Background())
	defer kstop()
	keeperDone := make(chan struct{})
	go func() {
		defer close(keeperDone)
		w.keepLeases(kctx, ch.client(workloads, client.WithRequestTimeout(time.Second)))
	}()
	for i := range workloads {
		spawn(func() { w.run(ctx, i, 1_000_000) })
	}

	kinds := faultKinds
	if *onlyFlag != "" {
		kinds = nil
		for _, k := range faultKinds {
			if slices.ContainsFunc(strings.Split(*onlyFlag, ","), func(part string) bool { return strings.Contains(k.name, part) }) {
				kinds = append(kinds, k)
			}
		}
	}
	var results []faultResult
	var faultErr error
	for i := 0; i < *faultsFlag && faultErr == nil && len(kinds) > 0; i++ {
		k := kinds[i%len(kinds)]
		if k.possible != nil {
			if err := k.possible(ch); err != nil {
				t.Logf("fault %d: %s not possible here (%v): skipped", i+1, k.name, err)
				continue
			}
		}
		if i > 0 && *restartsFlag {
			// A follower restarted just before the fault: the others'
			// connections pooled to its previous process are stale
			// when the fault makes them elect (issue 21).
			began := time.Now()
			rs, err := ch.restartBetween(i)
			ch.faults = append(ch.faults, [2]time.Time{began, time.Now()})
			for _, r := range rs {
				t.Logf("before fault %d: %s: back in %s", i+1, r.kind, r.failover.Round(time.Millisecond))
			}
			results = append(results, rs...)
			if err != nil {
				faultErr = fmt.Errorf("before fault %d (%s): %w", i+1, k.name, err)
				break
			}
		}
		began := time.Now()
		rs, err := k.run(ch)
		ch.faults = append(ch.faults, [2]time.Time{began, time.Now()})
		for _, r := range rs {
			t.Logf("fault %d: %s: back in %s (%s after the election)%s", i+1, r.kind, r.failover.Round(time.Millisecond), r.sinceElection.Round(time.Millisecond), r.describeMore())
		}
		results = append(results, rs...)
		if err != nil {
			faultErr = fmt.Errorf("fault %d (%s): %w", i+1, k.name, err)
		}
		time.Sleep(500 * time.Millisecond) // the load runs on between faults
	}
	stop()
	wg.Wait()
	if faultErr != nil {
		t.Error(faultErr)
	}
	fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	w.killBursts(fctx)
	w.finalReads(fctx)
	kstop()
	<-keeperDone
	w.finalProbes(fctx)
	probed := time.Now()
	sctx, scancel = context.WithTimeout(fctx, 15*time.Second)
	pw.settle(sctx, w.burstKilled)
	scancel()
	actx, acancel := context.WithTimeout(fctx, 30*time.Second)
	aw.finish(actx)
	acancel()
	cancel()
	time.Sleep(time.Until(probed.Add(4 * time.Second))) // the leader watched past the probes' window (checkAudit)
	lstop()
	<-lwDone

	v := ch.verify(w, lw, pw, aw, dir)
	rep := report(results, w, lw, v)
	t.Log("\n" + rep)
	if *reportFlag != "" {
		os.MkdirAll(filepath.Dir(*reportFlag), 0o755)
		if err := os.WriteFile(*reportFlag, []byte(rep), 0o644); err != nil {
			t.Error(err)
		}
	}
	if len(v.problems) > 0 || *keepFlag {
		aw.dump(filepath.Join(dir, "audit.jsonl"))
	}
	for _, line := range v.problems {
		t.Error(line)
	}
}

// client returns a workload client entering the cluster through master i
// first, so that requests reach every master (followers redirect).
func (ch *chaos) client(i int, opts ...client.Option) *client.Client {
	return ch.clientAs(i, secret, opts...)
}

// clientAs is client with secret ("" for a tenant's client, given its
// token in opts).
func (ch *chaos) clientAs(i int, secret string, opts ...client.Option) *client.Client {
	urls := ch.cl.URLs()
	rot := append(urls[i%len(urls):], urls[:i%len(urls)]...)
	c, err := client.New(rot, secret, append([]client.Option{
		client.WithRequestTimeout(2 * time.Second), client.WithRetryBudget(15 * time.Second),
		client.WithBackoff(20*time.Millisecond, 300*time.Millisecond), ch.cl.PKI.ClientOption()}, opts...)...)
	if err != nil {
		ch.t.Fatal(err)
	}
	return c
}

// startLongApps starts the `berth run` clients, waits for their executors
// to run, and has pw watch them.
func (ch *chaos) startLongApps(dir, marker string, pw *pidWatch) {
	for i, spec := range longApps {
		la := spec
		la.marker = fmt.Sprintf("%s%d", marker, i+1)
		p, err := testcluster.Start(ch.t, "berth-run-"+la.name, bin.Berth, filepath.Join(dir, "client-"+la.name+".log"),
			[]string{"--master", strings.Join(ch.cl.URLs(), ","), "--log-level", "debug", "run", "--name", la.name,
				"--queue", la.queue, "--priority", fmt.Sprint(la.priority),
				"--max-cores", fmt.Sprint(la.executors), "--cores-per-executor", "1", "--executor-memory", "64m",
				"--", "sleep", "3600", "{{EXECUTOR_ID}}", la.marker},
			testcluster.ProcOptions{Env: []string{"BERTH_SECRET=" + secret, "BERTH_TLS_CA_FILE=" + ch.cl.PKI.CAFile()}})
		if err != nil {
			ch.t.Fatal(err)
		}
		la.client = p
		ch.long = append(ch.long, &la)
	}
	if _, err := ch.backAt("start", time.Now(), 0, true); err != nil {
		ch.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), backWithin)
	defer cancel()
	_, st, err := ch.cl.WaitLeader(ctx)
	if err != nil {
		ch.t.Fatal(err)
	}
	for _, la := range ch.long {
		for _, a := range st.ActiveApps {
			if a.Name == la.name {
				la.id = a.ID
			}
		}
		pw.add(la.marker, la.name, la.strict, la.executors)
		pw.learn(la.marker, la.id)
	}
	if err := pw.baseline(backWithin); err != nil {
		ch.t.Fatal(err)
	}
}

// verdict is what the checks found.
type verdict struct {
	linearizable porcupine.CheckResult
	checked      int // ops in the history
	acked        int // acknowledged writes
	lost         []string
	audit        auditFigures
	preempted    int   // executors of the watched apps preempted
	inFaults     int   // preemptions decided while a fault was being injected or measured
	diskFull     int64 // answers 503 disk_full the workload's clients retried
	driversLost  int   // drivers ended with their worker
	problems     []string
}

func (ch *chaos) verify(w *workload, lw *leaderWatch, pw *pidWatch, aw *auditWatch, dir string) verdict {
	var v verdict
	history := w.rec.history()
	v.checked = len(history)
	res, info := porcupine.CheckOperationsVerbose(model.ToModel(), history, 2*time.Minute)
	v.linearizable = res
	if res != porcupine.Ok {
		path := filepath.Join(dir, "history.html")
		if f, err := os.Create(path); err == nil {
			porcupine.Visualize(model.ToModel(), info, f)
			f.Close()
		}
		v.problems = append(v.problems, fmt.Sprintf("history of %d ops is %s; see %s", len(history), res, path))
		for _, part := range model.Partition(history) {
			if !porcupine.CheckOperations(model.ToModel(), part) {
				v.problems = append(v.problems, "not linearizable: "+describeIllegal(part, 40))
			}
		}
	}
	v.acked, v.lost = losses(history)
	acked, lost, breaches := registerLosses(history)
	v.acked += acked
	v.lost = append(v.lost, lost...)
	for _, l := range v.lost {
		v.problems = append(v.problems, "lost: "+l)
	}
	for _, b := range breaches {
		v.problems = append(v.problems, "isolation: "+b)
	}
	// A driver ends with its worker only where a fault took the worker out.
	out := map[string]bool{}
	for _, o := range ch.outs {
		out[o.worker] = true
	}
	lostDrivers := map[string]bool{}
	for _, op := range history {
		in, o := op.Input.(input), op.Output.(output)
		if !o.lost || lostDrivers[in.key] {
			continue
		}
		lostDrivers[in.key] = true
		if !out[o.worker] {
			v.problems = append(v.problems, fmt.Sprintf("driver %s (%s) ended with its worker %q lost, but no fault took that worker out", in.key, in.id, o.worker))
		}
	}
	v.driversLost = len(lostDrivers)
	v.diskFull = ch.diskFull.Load()
	var auditProblems []string
	v.audit, auditProblems = aw.checkAudit(history, w.rec, lw)
	v.problems = append(v.problems, auditProblems...)
	for _, p := range lw.violations() {
		v.problems = append(v.problems, "two leaders: "+p)
	}
	pre := ch.preemptions()
	var execProblems []string
	execProblems, v.preempted = pw.violations(pre, w.killedAt, time.Now())
	for _, p := range execProblems {
		v.problems = append(v.problems, "executor: "+p)
	}
	for _, p := range pre {
		for _, t := range p.decided {
			for _, f := range ch.faults {
				if !t.Before(f[0]) && !t.After(f[1]) {
					v.inFaults++
				}
			}
		}
	}
	for _, la := range ch.long {
		if la.client.Exited() {
			v.problems = append(v.problems, fmt.Sprintf("client of %s exited: %v", la.name, la.client.Err()))
		}
	}
	// A crash, a race, or a 500 (a bug: an answer no route declares) in
	// any daemon's log.
	crash := regexp.MustCompile(`^(panic:|fatal error:)|DATA RACE|500 Internal Server Error|"code":"internal"`)
	for _, m := range ch.cl.Masters {
		for _, line := range m.Proc().LogMatches(crash) {
			v.problems = append(v.problems, fmt.Sprintf("master %s: %s", m.ID, line))
		}
	}
	for _, wk := range ch.cl.Workers {
		for _, line := range wk.LogMatches(crash) {
			v.problems = append(v.problems, fmt.Sprintf("worker %s: %s", wk.ID, line))
		}
	}
	return v
}

// describe lists a partition's ops, with their times since the run began.
func describe(ops []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range ops {
		ret := "never answered"
		if op.Return != pending {
			ret = time.Duration(op.Return).String()
		}
		fmt.Fprintf(&b, "      client %d, %s → %s: %s\n", op.ClientId, time.Duration(op.Call), ret, model.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// losses counts the acknowledged writes and lists those the final reads
// did not find: a registration or submission answered with an id whose
// app or driver is gone, a kill answered KILLED whose app is not.
func losses(history []porcupine.Operation) (acked int, lost []string) {
	final := map[string]output{} // the last read of each key
	for _, op := range history {
		in, out := op.Input.(input), op.Output.(output)
		if (in.kind == opRead || in.kind == opReadDriver) && !out.unknown {
			final[in.key] = out
		}
	}
	for _, op := range history {
		in, out := op.Input.(input), op.Output.(output)
		if out.unknown || out.status != 0 || in.probe {
			continue
		}
		f, read := final[in.key]
		switch in.kind {
		case opRegister, opSubmitDriver:
			acked++
			if read && f.status == 404 {
				lost = append(lost, fmt.Sprintf("%s %s acknowledged as %s, then unknown", in.kind, in.key, out.id))
			}
		case opKill:
			acked++
			if read && f.state != "KILLED" {
				lost = append(lost, fmt.Sprintf("kill of %s acknowledged, then read %s", in.id, f.state))
			}
		case opKillDriver, opLimit:
			acked++
		}
	}
	return acked, lost
}

// killMarked kills, by pid, any process of this run left behind (the
// workers' children die with them; this is in case one did not).
func killMarked(marker string) {
	for _, pid := range pidsContaining(marker) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
