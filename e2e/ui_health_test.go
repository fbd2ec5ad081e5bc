package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/berth-cluster/berth/wire"
)

// TestUIHealthInABrowser reads healthy processes, exclusions and an
// unhealthy worker in the master's UI, as an operator would, and clears
// the worker from its page (issue 22, docs/HEALTH.md, docs/UI.md): a
// checked service's page shows its executors healthy with their ports
// (as the API gives them) and its check; an app whose executors fail on
// w1 (their command exits 1 while a flag file exists) shows the worker it
// is kept off; once three apps failed there, the overview counts w1
// unhealthy and w1's page says since when and why, with the apps kept off
// it; its Clear button (confirmed in the page) ends the mark and the
// exclusions, as the API then says, and the failing apps, fixed
// meanwhile, run on w1 again.
func TestUIHealthInABrowser(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 1, workers: []string{"w1"}, cores: 6, memory: "1g"})
	base := cl.master("m1").URL

	// A checked service with two ports, healthy.
	web := checkedService("ui-web", 2, nil, time.Second, 300*time.Millisecond, 3, 0)
	web.Ports = []string{"http", "admin"}
	webID := cl.registerApp(t, web)
	webApp := cl.appWhen(webID, 30*time.Second, "2 healthy executors with their ports", func(a wire.AppStatus) error {
		n := 0
		for _, e := range a.Executors {
			if e.State == wire.ExecutorRunning && e.Health == wire.HealthHealthy && e.Ports["http"] > 0 && e.Ports["admin"] > 0 {
				n++
			}
		}
		if n != 2 {
			return fmt.Errorf("%d healthy", n)
		}
		return nil
	})

	// Apps whose executors the worker cannot start (only what the worker
	// causes makes it unhealthy): each app's directory on w1 is planted
	// as a file, so w1 cannot make the executor's directory in it. The
	// first is kept off w1, then two more make w1 unhealthy. Removing
	// the files fixes them.
	attempts := 1000
	var planted []string
	failing := func(name string) string {
		zero := 0
		id := cl.registerApp(t, wire.AppDescription{
			Name:                 name,
			MaxCores:             1,
			CoresPerExecutor:     1,
			MemoryPerExecutorMB:  32,
			InitialExecutorLimit: &zero,
			Command:              []string{"/bin/sh", "-c", "sleep 3600; : " + cl.marker},
			ProcessSpec:          wire.ProcessSpec{Restart: &wire.RestartPolicy{Attempts: &attempts}},
		})
		file := filepath.Join(cl.worker("w1").WorkDir, id)
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		planted = append(planted, file)
		if err := cl.c.SetExecutorLimit(callCtx(t, 10*time.Second), id, 1); err != nil {
			t.Fatal(err)
		}
		return id
	}
	bad := []string{failing("ui-bad-1")}
	cl.appWhen(bad[0], 30*time.Second, "kept off w1", func(a wire.AppStatus) error {
		if len(a.Excluded) != 1 || a.Excluded[0].WorkerID != "w1" {
			return fmt.Errorf("excluded %+v", a.Excluded)
		}
		return nil
	})
	bad = append(bad, failing("ui-bad-2"), failing("ui-bad-3"))
	st := cl.statusWhen(30*time.Second, "w1 unhealthy", func(st wire.ClusterStatus) error {
		if w, _ := workerIn(st, "w1"); w.Unhealthy == "" || w.UnhealthySince == nil {
			return fmt.Errorf("w1: %+v", w)
		}
		return nil
	})
	sick, _ := workerIn(st, "w1")
	t.Logf("w1 unhealthy: %s", sick.Unhealthy)

	b := newBrowser(t)
	b.signIn(base)

	// The service's page: each executor healthy, with the ports the API
	// gives it, and the check it runs.
	var ports []string
	for _, e := range webApp.Executors {
		ports = append(ports, fmt.Sprintf("admin=%d", e.Ports["admin"]), fmt.Sprintf("http=%d", e.Ports["http"]))
	}
	page := b.until(base+"/ui/apps/"+webID, "the service's executors healthy with their ports", 10*time.Second, func(s string) error {
		return wantText(s, append(ports, "healthy", "ports: http, admin", "check web: GET :http/health every 1s, timeout 300ms, 3 failures in a row")...)
	})
	var healthy int
	b.run("counting healthy executors", chromedp.Evaluate(`document.querySelectorAll("span.health-healthy").length`, &healthy))
	if healthy != 2 {
		t.Errorf("the service's page shows %d healthy executors, want 2: %q", healthy, page)
	}
	b.screenshot("ui-app-health")

	// The failing app's page: the worker it is kept off, until when, why.
	mustContain(t, "the failing app's page", b.open(base+"/ui/apps/"+bad[0]), "Kept off workers", "w1", "failed there", "FAILED",
		"restart policy: 1000 attempts")

	// The overview counts w1 unhealthy; w1's page says since when and why,
	// lists the apps kept off it, and offers Clear.
	mustContain(t, "the overview", b.open(base+"/ui/"), "1 unhealthy", "UNHEALTHY since", "Clear")
	page = b.open(base + "/ui/workers/w1")
	mustContain(t, "w1's page", page, "UNHEALTHY since "+sick.UnhealthySince.Local().Format("2006-01-02 15:04:05"), sick.Unhealthy,
		"Nothing new is placed here", "Apps kept off this worker", bad[0], "Clear")
	b.screenshot("ui-worker-unhealthy")

	// Fixed, then cleared from w1's page: healthy again, no app kept off
	// it, and the apps that failed there run there.
	for _, f := range planted[1:] {
		os.Remove(f)
	}
	if err := os.Remove(planted[0]); err != nil {
		t.Fatal(err)
	}
	b.run("opening w1's page", chromedp.Navigate(base+"/ui/workers/w1"))
	b.click("clearing w1 from its page", `button.clear`, 10*time.Second)
	b.run("waiting for the cleared page", chromedp.WaitNotPresent(`button.clear`, chromedp.ByQuery))
	if s := b.text(); strings.Contains(s, "cannot clear") {
		t.Fatalf("the Clear form was refused: %q", s)
	}
	cl.statusWhen(10*time.Second, "w1 healthy, no app kept off it", func(st wire.ClusterStatus) error {
		if w, _ := workerIn(st, "w1"); w.Unhealthy != "" {
			return fmt.Errorf("w1 still unhealthy: %s", w.Unhealthy)
		}
		for _, id := range bad {
			if a, _ := appStatus(st, id); len(a.Excluded) > 0 {
				return fmt.Errorf("%s still excluded: %+v", id, a.Excluded)
			}
		}
		return nil
	})
	b.until(base+"/ui/workers/w1", "w1's page without the mark", 10*time.Second, func(s string) error {
		if strings.Contains(s, "UNHEALTHY") || strings.Contains(s, "Apps kept off") || strings.Contains(s, "Clear") {
			return fmt.Errorf("still marked: %q", s)
		}
		return nil
	})
	if s := b.open(base + "/ui/"); strings.Contains(s, "1 unhealthy") || strings.Contains(s, "UNHEALTHY") {
		t.Errorf("the overview still marks w1 unhealthy: %q", s)
	}
	for _, id := range bad {
		cl.appWhen(id, 60*time.Second, "running on w1 again", func(a wire.AppStatus) error {
			for _, e := range a.Executors {
				if e.State == wire.ExecutorRunning && e.WorkerID == "w1" {
					return nil
				}
			}
			return fmt.Errorf("none running")
		})
	}
}
