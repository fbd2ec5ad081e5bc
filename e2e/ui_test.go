package e2e

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestWebUIInABrowser uses the master's UI as an operator would, on a
// 3-master TLS cluster with three workers (two GPUs each), two queues of
// different weights and two running apps, one in each, one of them on a
// GPU: nothing shows before signing in; the overview lists the cluster, the
// GPUs in use and each app's queue; the topology puts each executor on its
// worker; the queues page shows the figures GET /v1/queues does; a worker killed with SIGKILL shows DEAD
// and its executors LOST; after a kill -9 of the leader the new leader's
// pages show the app intact, and every follower's page says it is a
// follower's and links to the new leader; a cross-site form post kills
// nothing; killing an app from its page kills it, once confirmed in the
// page or, with scripts off, on the confirmation page.
func TestWebUIInABrowser(t *testing.T) {
	t.Parallel()
	hc := startCluster(t, clusterSpec{masters: 3, flags: []string{"--worker-timeout", "4s", "--recovery-timeout", "20s"},
		workers: []string{"w1", "w2", "w3"}, cores: 2, memory: "1g", workerFlags: []string{"--resource", "gpu=2", "--label", "zone=lab"}})
	one, two := 1.0, 2.0
	for name, spec := range map[string]wire.QueueSpec{
		"batch": {Weight: &one, Limit: &wire.Amount{Cores: 4}},
		"etl":   {Weight: &two, Guarantee: &wire.Amount{Cores: 1, Resources: wire.ResourceAmounts{"gpu": 1}}},
	} {
		if _, err := hc.c.PutQueue(callCtx(t, 30*time.Second), name, spec); err != nil {
			t.Fatal(err)
		}
	}
	pi := hc.longApp("ui-pi", 3)
	pi.Queue = "batch"
	appID := hc.registerApp(t, pi)
	before := hc.runningApp(appID, 3, 20*time.Second)
	gpuApp := hc.longApp("ui-gpu", 1)
	gpuApp.ResourcesPerExecutor = wire.ResourceAmounts{"gpu": 1}
	gpuApp.Queue, gpuApp.Priority = "etl", 5
	other, err := hc.c.RegisterApp(callCtx(t, 30*time.Second), gpuApp)
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, hc.c, other)
	hc.runningApp(other, 1, 20*time.Second)
	leader := hc.master(before.MasterID)
	b := newBrowser(t)

	// Nothing before the sign-in: the page is the sign-in form.
	page := b.open(leader.URL + "/ui/")
	if strings.Contains(page, appID) || strings.Contains(page, "w1") || !strings.Contains(page, "Sign in") {
		t.Fatalf("a page without a session shows: %q", page)
	}
	b.signIn(leader.URL)
	page = b.until(leader.URL+"/ui/", "the overview lists the cluster", 10*time.Second, func(s string) error {
		if err := wantText(s, appID, other, "w1", "w2", "w3", "ALIVE", "3 alive", "leader view", "gpu 1/2 free", "gpu 2/2 free", "gpu 5/6 free", "Follower"); err != nil {
			return err
		}
		if strings.Contains(s, "not answering") { // the followers announce their API addresses after they join
			return fmt.Errorf("a master's Raft figures are missing")
		}
		return nil
	})
	mustContain(t, "the overview", page, "m1", "m2", "m3", "ui-pi", "RUNNING", "Leader", "Follower", "batch", "etl", "priority 5",
		"zone=lab") // the workers' labels, as the CLI shows them
	if strings.Contains(page, "not answering") {
		t.Errorf("a master's Raft figures are missing from the overview")
	}
	b.screenshot("ui-overview")

	// The topology puts each executor on the worker the API says.
	st := hc.mustStatus()
	want := map[string][]string{}
	for _, a := range st.ActiveApps {
		for _, e := range liveExecutors(a) {
			want[e.WorkerID] = append(want[e.WorkerID], a.ID)
		}
	}
	b.open(leader.URL + "/ui/topology")
	var rows map[string][]string
	b.run("reading the topology", chromedp.Evaluate(`Object.fromEntries(Array.from(document.querySelectorAll("tr.bar-row")).map(r =>
		[r.querySelector("a").textContent, Array.from(r.querySelectorAll("rect.seg")).map(s => s.dataset.app)]))`, &rows))
	for w := range rows {
		slices.Sort(rows[w])
		slices.Sort(want[w])
		if len(rows[w]) == 0 && len(want[w]) == 0 {
			continue
		}
		if !slices.Equal(rows[w], want[w]) {
			t.Errorf("topology, worker %s: segments %v, the API's executors %v", w, rows[w], want[w])
		}
	}
	if len(rows) != 3 {
		t.Errorf("topology rows %v, want the 3 workers", slices.Collect(maps.Keys(rows)))
	}
	// Its apps by name too, each of its own colour (two apps got one).
	var swatches map[string]string
	b.run("reading the topology's apps", chromedp.Evaluate(`Object.fromEntries(Array.from(document.querySelectorAll("svg.swatch")).map(s =>
		[s.closest("td").textContent.trim(), s.querySelector("rect").getAttribute("fill")]))`, &swatches))
	colours := map[string]bool{}
	for label, fill := range swatches {
		colours[fill] = true
		if !strings.Contains(label, " ui-") {
			t.Errorf("topology's app %q without its name", label)
		}
	}
	if len(swatches) != 2 || len(colours) != 2 {
		t.Errorf("topology's apps %v: want 2, of 2 colours", swatches)
	}
	b.screenshot("ui-topology")
	// An executor killed at its app's request says so on the app page,
	// which shows the executors' command.
	if err := hc.c.KillExecutors(callCtx(t, 20*time.Second), appID, []int{liveExecutors(mustApp(t, st, appID))[0].ID}); err != nil {
		t.Fatal(err)
	}
	page = b.until(leader.URL+"/ui/apps/"+appID, "the app page with the killed executor", 10*time.Second, func(s string) error {
		return wantText(s, "killed by its app's request")
	})
	mustContain(t, "the app page", page, appID, "RUNNING", "Kill application", "stdout", "queue batch", "executors run", hc.marker)
	b.screenshot("ui-app")

	// A worker's own page: what it offers, how it enforces limits (as it
	// told the master), and the GPU executor it runs with its GPU.
	gpuExec := liveExecutors(mustApp(t, st, other))[0]
	gpuWorker, _ := workerIn(st, gpuExec.WorkerID)
	if gpuWorker.Limits == "" {
		t.Fatalf("worker %s reports no limits: %+v", gpuExec.WorkerID, gpuWorker)
	}
	workerURL := hc.worker(gpuExec.WorkerID).URL
	b.signIn(workerURL)
	page = b.open(workerURL + "/ui/")
	mustContain(t, "the worker's page", page, "Worker "+gpuExec.WorkerID, "gpu 0, 1", "limits: "+gpuWorker.Limits,
		fmt.Sprintf("%s/%d", other, gpuExec.ID), gpuExec.Resources.String(), "RUNNING")
	b.screenshot("ui-worker")

	// A log page follows its stream: a line written after the page opened
	// appears in it, without a reload.
	talker := hc.registerApp(t, wire.AppDescription{Name: "ui-talker", MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 32,
		Command: []string{"/bin/sh", "-c", "echo first-line; sleep 2; echo later-line; sleep 3600; : " + hc.marker}})
	hc.appWhen(talker, 20*time.Second, "its executor RUNNING", func(a wire.AppStatus) error {
		if len(executorsIn(a, wire.ExecutorRunning)) != 1 {
			return fmt.Errorf("executors %s", describeExecs(a))
		}
		return nil
	})
	b.run("opening the log page", chromedp.Navigate(leader.URL+"/ui/logs?app="+talker+"&executor=0&stream=stdout"), chromedp.WaitReady("#log", chromedp.ByID))
	testproc.Eventually(t, 15*time.Second, "the later line in the followed log", func() error {
		var log string
		if err := chromedp.Run(b.ctx, chromedp.Text("#log", &log, chromedp.ByID)); err != nil {
			return err
		}
		return wantText(log, "first-line", "later-line")
	})

	// The queues page shows what GET /v1/queues says: batch, etl, and
	// default with the talker in it.
	testproc.Eventually(t, 15*time.Second, "the queues page showing GET /v1/queues", func() error {
		rows, capacity := b.queues(leader.URL)
		qs, err := hc.c.Queues(callCtx(t, 10*time.Second))
		if err != nil {
			return err
		}
		return queuesShown(rows, capacity, qs)
	})
	b.screenshot("ui-queues")

	// A worker killed with SIGKILL: DEAD on the overview, its executors
	// LOST on the app's page.
	var victim string
	for _, e := range liveExecutors(mustApp(t, st, appID)) {
		victim = e.WorkerID
	}
	hc.worker(victim).Kill()
	b.until(leader.URL+"/ui/workers/"+victim, "the killed worker DEAD", 20*time.Second, func(s string) error { return wantText(s, "DEAD") })
	b.until(leader.URL+"/ui/apps/"+appID, "its executors LOST", 10*time.Second, func(s string) error { return wantText(s, "LOST", "executorLost") })

	// kill -9 of the leader: the new leader's pages show the app, running.
	leader.Proc().Kill()
	newLeader, _ := hc.leader(20*time.Second, leader)
	b.signIn(newLeader.URL) // a session is per address: sign in there
	b.until(newLeader.URL+"/ui/apps/"+appID, "the app on the new leader's page as its API shows it", 20*time.Second, func(s string) error {
		a := mustApp(t, hc.mustStatus(), appID)
		cores := 0
		for _, e := range liveExecutors(a) {
			cores += e.Cores
		}
		count := func(n int, one, many string) string {
			if n == 1 {
				return "1 " + one
			}
			return fmt.Sprintf("%d %s", n, many)
		}
		return wantText(s, appID, "RUNNING", count(len(liveExecutors(a)), "executor", "executors")+" holding "+count(cores, "core", "cores"))
	})
	survivor := slices.DeleteFunc([]string{"w1", "w2", "w3"}, func(w string) bool { return w == victim })[0]
	for _, m := range hc.others(leader, newLeader) {
		b.signIn(m.URL)
		for _, path := range []string{"/ui/", "/ui/topology", "/ui/queues", "/ui/workers/" + survivor, "/ui/apps/" + appID} {
			mustContain(t, "a follower's page "+path, b.open(m.URL+path), "follower's view", newLeader.URL)
		}
	}

	// A page of another site posts the kill form: refused, nothing killed.
	evil := crossSitePage(t, newLeader.URL+"/ui/act", other)
	b.run("the cross-site page", chromedp.Navigate(evil), chromedp.WaitReady("body", chromedp.ByQuery))
	testproc.Eventually(t, 10*time.Second, "the cross-site form to be answered", func() error {
		var loc string
		if err := chromedp.Run(b.ctx, chromedp.Location(&loc)); err != nil || !strings.HasPrefix(loc, newLeader.URL) {
			return fmt.Errorf("at %q", loc)
		}
		return nil
	})
	if a := mustApp(t, hc.mustStatus(), other); a.State != wire.AppRunning {
		t.Errorf("the app a cross-site form tried to kill is %s", a.State)
	}

	// Kill the app from its page: the button, the confirmation, done.
	b.run("opening the app's page", chromedp.Navigate(newLeader.URL+"/ui/apps/"+appID))
	b.click("killing the app from its page", `button.danger`, 10*time.Second)
	hc.appWhen(appID, 15*time.Second, "KILLED from the UI", func(a wire.AppStatus) error {
		if a.State != wire.AppKilled {
			return fmt.Errorf("state %s", a.State)
		}
		return nil
	})
	if a := mustApp(t, hc.mustStatus(), other); a.State != wire.AppRunning {
		t.Errorf("the other app is %s after the kill of %s", a.State, appID)
	}

	// With scripts off, the button leads to a confirmation page that says
	// what will happen; only its Confirm kills.
	b.run("the kill button with scripts off",
		emulation.SetScriptExecutionDisabled(true),
		chromedp.Navigate(newLeader.URL+"/ui/apps/"+other),
		chromedp.WaitVisible(`button.danger`, chromedp.ByQuery),
		chromedp.Click(`button.danger`, chromedp.ByQuery),
		chromedp.WaitVisible(`form.confirm button`, chromedp.ByQuery))
	mustContain(t, "the confirmation page", b.text(), "Kill application "+other+" and all its executors?", "executors holding", "Cancel")
	if a := mustApp(t, hc.mustStatus(), other); a.State != wire.AppRunning {
		t.Errorf("the app is %s before the kill was confirmed", a.State)
	}
	b.run("confirming the kill", chromedp.Click(`form.confirm button`, chromedp.ByQuery))
	hc.appWhen(other, 15*time.Second, "KILLED once confirmed without scripts", func(a wire.AppStatus) error {
		if a.State != wire.AppKilled {
			return fmt.Errorf("state %s", a.State)
		}
		return nil
	})
}

// registerApp registers desc through the cluster's client and follows its
// events (its lease).
func (cl *cluster) registerApp(t *testing.T, desc wire.AppDescription) string {
	t.Helper()
	id, err := cl.c.RegisterApp(callCtx(t, 30*time.Second), desc)
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, id)
	return id
}

// queues opens the queues page at base and reads its rows, each queue's
// cells by column (as shown), and its capacity card.
func (b *browser) queues(base string) (rows map[string]map[string]string, capacity string) {
	b.t.Helper()
	b.run("reading the queues page", chromedp.Navigate(base+"/ui/queues"), chromedp.WaitReady("p.capacity", chromedp.ByQuery),
		chromedp.Evaluate(`Object.fromEntries(Array.from(document.querySelectorAll("tr.queue")).map(r =>
			[r.dataset.queue, Object.fromEntries(Array.from(r.querySelectorAll("td[data-col]")).map(c => [c.dataset.col, c.innerText.trim()]))]))`, &rows),
		chromedp.Text("p.capacity", &capacity, chromedp.ByQuery))
	return rows, capacity
}

// queuesShown says how the queues page's rows differ from qs, the API's.
func queuesShown(rows map[string]map[string]string, capacity string, qs wire.Queues) error {
	names := make([]string, len(qs.Queues))
	for i, q := range qs.Queues {
		names[i] = q.Name
	}
	if shown := slices.Sorted(maps.Keys(rows)); !slices.Equal(shown, []string{"batch", "default", "etl"}) || !slices.Equal(shown, names) {
		return fmt.Errorf("queues shown %v, the API's %v", shown, names)
	}
	if err := wantText(capacity, fmt.Sprintf("%d cores", qs.Capacity.Cores), fmt.Sprintf("gpu %v", qs.Capacity.Resources["gpu"])); err != nil {
		return fmt.Errorf("capacity %q, the API's %+v: %w", capacity, qs.Capacity, err)
	}
	for _, q := range qs.Queues {
		row := rows[q.Name]
		want := map[string]string{"name": q.Name, "weight": strconv.FormatFloat(q.Weight, 'f', -1, 64),
			"apps": strconv.Itoa(q.Apps), "drivers": strconv.Itoa(q.Drivers), "preemptions": strconv.Itoa(q.Preemptions)}
		for col, v := range want {
			if row[col] != v {
				return fmt.Errorf("queue %s: %s %q shown, the API's %q", q.Name, col, row[col], v)
			}
		}
		share := []string{fmt.Sprintf("%.1f%% in use", q.DominantShare*100), fmt.Sprintf("%.1f%% fair", q.FairDominantShare*100)}
		inUse := []string{}
		if q.InUse.Cores > 0 {
			inUse = append(inUse, fmt.Sprintf("%d core", q.InUse.Cores))
		}
		for r, v := range q.InUse.Resources {
			inUse = append(inUse, fmt.Sprintf("%s %v", r, v))
		}
		if err := errors.Join(wantText(row["share"], share...), wantText(row["inuse"], inUse...)); err != nil {
			return fmt.Errorf("queue %s: shares %q, in use %q, the API's %+v: %w", q.Name, row["share"], row["inuse"], q, err)
		}
		if q.Apps != 1 || q.DominantShare <= 0 {
			return fmt.Errorf("queue %s: %d apps, dominant share %v, want its one app running", q.Name, q.Apps, q.DominantShare)
		}
	}
	return nil
}

func mustApp(t *testing.T, st wire.ClusterStatus, id string) wire.AppStatus {
	t.Helper()
	a, ok := appStatus(st, id)
	if !ok {
		t.Fatalf("app %s not listed", id)
	}
	return a
}

// crossSitePage serves, on another loopback address, a page that posts the
// UI's kill form for app to target as soon as it loads (what a malicious
// page would do); it returns the page's URL.
func crossSitePage(t *testing.T, target, app string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.9:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s"><input name="kind" value="kill-app"><input name="id" value="%s"><input name="csrf" value="guess"></form><script>document.getElementById("f").submit()</script>`, target, app)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}
