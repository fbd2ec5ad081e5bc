package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestWebUIInABrowserAsATenant follows the log link Spark's UI gives a
// tenant's user (the master's /ui/logs?app=&executor=&stream=), on a TLS
// master with a worker, in a real browser: the link leads to the sign-in
// page, where the tenant's token signs in and the browser comes back to
// the executor's stdout, followed live; the operator's app's log, and the
// overview, are refused with pages that say why; once the operator
// deletes the tenant, its session no longer opens anything. (Named after
// TestWebUIInABrowser so that make screenshots takes its screenshots.)
func TestWebUIInABrowserAsATenant(t *testing.T) {
	t.Parallel()
	hc := startCluster(t, clusterSpec{masters: 1, workers: []string{"w1"}, cores: 2, memory: "1g"})
	token := hc.createTenant(&auditLedger{}, "acme", wire.DefaultQueue)
	tc := tenantClient(t, token, hc.URLs()...)
	own, err := tc.RegisterApp(callCtx(t, 30*time.Second), wire.AppDescription{Name: "acme-etl", MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 32,
		Command: []string{"/bin/sh", "-c", "echo 'Running Spark executor 0 for acme-etl'; sleep 1; echo 'Finished task 0.0 in stage 0.0 (TID 0)'; sleep 3600; : " + hc.marker}})
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, tc, own)
	ops := hc.registerApp(t, hc.longApp("ops-only", 1))
	for _, id := range []string{own, ops} {
		hc.appWhen(id, 20*time.Second, "its executor RUNNING", func(a wire.AppStatus) error {
			if len(executorsIn(a, wire.ExecutorRunning)) != 1 {
				return fmt.Errorf("executors %s", describeExecs(a))
			}
			return nil
		})
	}
	base := hc.master(hc.mustStatus().LeaderID).URL
	logLink := func(app string) string { return base + "/ui/logs?app=" + app + "&executor=0&stream=stdout" }
	b := newBrowser(t)

	// The link, without a session: the sign-in page, which takes the
	// tenant's token and comes back to the log.
	page := b.open(logLink(own))
	mustContain(t, "the log link without a session", page, "Sign in", "Operator secret, or your tenant token")
	b.run("signing in with the tenant's token",
		chromedp.SendKeys(`input[name="token"]`, token, chromedp.ByQuery),
		chromedp.Submit(`input[name="token"]`, chromedp.ByQuery),
		chromedp.WaitReady("#log", chromedp.ByID))
	testproc.Eventually(t, 15*time.Second, "the executor's stdout in the followed log", func() error {
		var log string
		if err := chromedp.Run(b.ctx, chromedp.Text("#log", &log, chromedp.ByID)); err != nil {
			return err
		}
		return wantText(log, "Running Spark executor 0 for acme-etl", "Finished task 0.0")
	})
	var loc string
	b.run("reading where the browser is", chromedp.Location(&loc))
	if loc != logLink(own) {
		t.Errorf("after the sign-in the browser is at %s, want the log link %s", loc, logLink(own))
	}
	page = b.text()
	mustContain(t, "the tenant's log page", page, "signed in as tenant acme", own+" executor 0: stdout", "Sign out")
	if strings.Contains(page, "Topology") {
		t.Error("the tenant's log page links to the operators' pages")
	}
	b.screenshot("ui-tenant-logs")

	// Its own app's page, read-only.
	page = b.open(base + "/ui/apps/" + own)
	mustContain(t, "the tenant's app page", page, own, "acme-etl", "RUNNING", "stdout")
	if strings.Contains(page, "Kill application") {
		t.Error("the tenant's app page offers a kill")
	}

	// The operator's app: refused as an app that does not exist.
	others, none := b.open(logLink(ops)), b.open(logLink("app-20200101000000-9999"))
	mustContain(t, "the operator's app's log", others, "Cannot show this", `Tenant acme has no application "`+ops+`"`)
	if strings.ReplaceAll(others, ops, "ID") != strings.ReplaceAll(none, "app-20200101000000-9999", "ID") {
		t.Errorf("the operator's app's log and an unknown one's are answered apart:\n%s\n%s", others, none)
	}

	// The overview needs an operator.
	page = b.open(base + "/ui/")
	mustContain(t, "the overview for a tenant", page, "For operators only", "This page needs an operator: you are signed in as tenant acme.")
	if strings.Contains(page, ops) || strings.Contains(page, "w1") {
		t.Errorf("the refused overview shows the cluster: %q", page)
	}
	b.screenshot("ui-tenant-refused")

	// The tenant deleted, its session opens nothing: the sign-in again.
	if err := hc.c.DeleteTenant(callCtx(t, 30*time.Second), "acme"); err != nil {
		t.Fatal(err)
	}
	b.until(logLink(own), "the deleted tenant's session refused", 10*time.Second, func(s string) error {
		if strings.Contains(s, "Running Spark executor") {
			return fmt.Errorf("the log still shows")
		}
		return wantText(s, "Sign in")
	})
}
