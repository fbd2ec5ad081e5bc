package e2e

// A tenant deleted while its app runs, on three masters.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestQueuesTenantDeletedKeepsItsAppRunning, on three masters: tenant td
// is made, and its token works on every master as soon as that is
// acknowledged; td runs an app of two executors with its token; the
// operator deletes td.
// Its token then answers 401 on every master at once (a follower sends a
// tenant's request to the leader, which alone checks tokens: a follower's
// replica may lag behind a creation or a deletion);
// its app runs on (RUNNING, the same processes, no SIGTERM), still marked
// as td's; the tenant is gone from the list; the deletion is in GET
// /v1/audit on every master.
func TestQueuesTenantDeletedKeepsItsAppRunning(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 3, flags: []string{"--worker-timeout", "10s"}, workers: []string{"w1"}, cores: 2, memory: "1g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"t": {}})
	token := cl.createTenant(led, "td", "t")
	created := time.Now()
	// A token works on every master once its creation is acknowledged
	// (the client may call any of them); a follower that has not yet
	// applied the creation must not refuse it.
	leader, _ := cl.leader(10 * time.Second)
	for _, m := range append([]*testcluster.Master{leader}, cl.others(leader)...) {
		if a, err := callViaLeader(m.URL, http.MethodGet, "/v1/cluster", token, nil); err != nil || a.status != http.StatusOK {
			t.Errorf("td's token on %s (%s) %s after its creation was acknowledged: %v %d %s; want 200", m.ID, roleOf(m, leader),
				time.Since(created).Round(time.Millisecond), err, a.status, strings.TrimSpace(a.body))
		}
	}
	for _, m := range cl.Masters {
		testproc.Eventually(t, 3*time.Second, "td's token accepted by "+m.ID, func() error {
			a, err := callViaLeader(m.URL, http.MethodGet, "/v1/cluster", token, nil)
			if err == nil && a.status != http.StatusOK {
				err = fmt.Errorf("%d %s", a.status, a.body)
			}
			return err
		})
	}
	ctd := tenantClient(t, token, cl.URLs()...)
	dir := t.TempDir()
	app, err := ctd.RegisterApp(callCtx(t, 30*time.Second), cl.termApp("kept", "t", 2, dir, true))
	if err != nil {
		t.Fatal(err)
	}
	led.tenant("td", wire.MasterAPI.RegisterApp.Mux(), app, "ok")
	stream := followEvents(t, ctd, app)
	cl.runningApp(app, 2, 20*time.Second)
	pids := cl.execPids()

	if err := cl.c.DeleteTenant(callCtx(t, 30*time.Second), "td"); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	led.operator(wire.MasterAPI.DeleteTenant.Mux(), "td")
	// Its token stops working on every master at once: the leader, which
	// acknowledged the deletion, first, then the followers.
	for _, m := range append([]*testcluster.Master{leader}, cl.others(leader)...) {
		if a, err := callViaLeader(m.URL, http.MethodGet, "/v1/cluster", token, nil); err != nil || a.status != http.StatusUnauthorized {
			t.Errorf("td's token on %s (%s) %s after the deletion was acknowledged: %v %d; want 401 at once on every master", m.ID, roleOf(m, leader),
				time.Since(deleted).Round(time.Millisecond), err, a.status)
		}
	}
	for _, m := range cl.Masters {
		testproc.Eventually(t, 3*time.Second, "td's token refused by "+m.ID, func() error {
			a, err := callViaLeader(m.URL, http.MethodGet, "/v1/cluster", token, nil)
			if err != nil {
				return err
			}
			if a.status != http.StatusUnauthorized {
				return fmt.Errorf("%d %s", a.status, a.body)
			}
			return nil
		})
		t.Logf("td's token refused by %s %s after the deletion was acknowledged", m.ID, time.Since(deleted).Round(time.Millisecond))
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/v1/queues"}, {http.MethodGet, "/v1/apps/" + app}, {http.MethodPost, "/v1/apps"},
			{http.MethodDelete, "/v1/apps/" + app}, {http.MethodGet, "/v1/apps/" + app + "/executors/0/logs/stdout"},
		} {
			var body []byte
			if c.method == http.MethodPost {
				body = jsonOf(t, cl.termApp("after", "t", 1, dir, true))
			}
			if a, err := callViaLeader(m.URL, c.method, c.path, token, body); err != nil || a.status != http.StatusUnauthorized {
				t.Errorf("td's token on %s after the deletion: %s %s: %v %d %s, want 401", m.ID, c.method, c.path, err, a.status, strings.TrimSpace(a.body))
			}
		}
	}
	if _, err := ctd.Queues(callCtx(t, 10*time.Second)); client.StatusCode(err) != http.StatusUnauthorized {
		t.Errorf("td's client after the deletion: %v, want a 401", err)
	}

	testproc.Stable(t, 2*time.Second, "td's app running on after the deletion", func() error {
		st, err := cl.status()
		if err != nil {
			return err
		}
		a, _ := appStatus(st, app)
		if a.State != wire.AppRunning || len(executorsIn(a, wire.ExecutorRunning)) != 2 || a.Tenant != "td" {
			return fmt.Errorf("app %s (tenant %q) executors %s, want RUNNING with 2 RUNNING executors", a.State, a.Tenant, describeExecs(a))
		}
		if got := cl.execPids(); !maps.Equal(got, pids) {
			return fmt.Errorf("executor processes %v, before the deletion %v", got, pids)
		}
		return nil
	})
	for id := range 2 {
		if terms := sigterms(t, dir, app, id); len(terms) > 0 {
			t.Errorf("executor %d of td's app got SIGTERM at %v", id, terms)
		}
	}
	if ended, err := stream.ended(); ended {
		t.Logf("td's event stream (with its token) ended after the deletion: %v", err)
	}
	if ts, err := cl.c.Tenants(callCtx(t, 10*time.Second)); err != nil || len(ts.Tenants) != 0 {
		t.Errorf("tenants after the deletion: %+v %v, want none", ts, err)
	}
	led.check(t, cl.c, "through the operator's client")
	// Each master answers GET /v1/audit from its replica.
	for _, m := range cl.Masters {
		testproc.Eventually(t, 3*time.Second, "the deletion in "+m.ID+"'s audit log", func() error {
			a, err := call(http.MethodGet, m.URL+"/v1/audit", secret, nil)
			if err != nil {
				return err
			}
			var audit wire.Audit
			if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &audit) != nil {
				return fmt.Errorf("%d %s", a.status, a.body)
			}
			if lacking, _ := led.missing(audit.Entries); len(lacking) > 0 {
				return fmt.Errorf("lacks %+v", lacking)
			}
			return nil
		})
	}
}

// roleOf says whether m is the leader.
func roleOf(m, leader *testcluster.Master) string {
	if m == leader {
		return "leader"
	}
	return "follower"
}

// callViaLeader is call on master base, following its redirect to the
// leader once, as every client does.
func callViaLeader(base, method, path, key string, body []byte) (answer, error) {
	a, err := call(method, base+path, key, body)
	if err != nil || a.status != http.StatusTemporaryRedirect {
		return a, err
	}
	var e wire.Error
	if err := json.Unmarshal([]byte(a.body), &e); err != nil || e.Leader == "" {
		return a, fmt.Errorf("a redirect naming no leader: %s", a.body)
	}
	return call(method, strings.TrimSuffix(e.Leader, "/")+path, key, body)
}
