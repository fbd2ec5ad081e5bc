package ui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// queues is a leader's queues: batch above its fair share (it took the
// idle capacity), etl below it with demand waiting and capacity being
// reclaimed for it, default holding nothing.
func queues() *wire.Queues {
	return &wire.Queues{Capacity: wire.Amount{Cores: 12, MemoryMB: 24576, Resources: wire.ResourceAmounts{"gpu": 4}},
		Queues: []wire.QueueStatus{
			{Name: "batch", Weight: 1, Limit: &wire.Amount{Cores: 10}, Preempt: true,
				InUse: wire.Amount{Cores: 8, MemoryMB: 4096}, DominantShare: 8.0 / 12, FairShare: wire.Amount{Cores: 4, MemoryMB: 2048}, FairDominantShare: 4.0 / 12,
				Apps: 2, Preemptions: 3},
			{Name: "default", Weight: 1, Preempt: true},
			{Name: "etl", Weight: 2.5, Guarantee: wire.Amount{Cores: 4, Resources: wire.ResourceAmounts{"gpu": 0.5}},
				InUse: wire.Amount{Cores: 1, MemoryMB: 512, Resources: wire.ResourceAmounts{"gpu": 1}}, DominantShare: 0.25,
				FairShare: wire.Amount{Cores: 6, MemoryMB: 3072, Resources: wire.ResourceAmounts{"gpu": 2}}, FairDominantShare: 0.5,
				Waiting: wire.Amount{Cores: 5, MemoryMB: 2560}, Apps: 1, Drivers: 1,
				Reclaiming: "cores 4 from queue batch to be reclaimed in 25s"},
		}}
}

func TestQueuesPageShowsUseAgainstFairShare(t *testing.T) {
	h := Handler(Options{Source: &fakeSource{c: cluster(3, 1), queues: queues()}, Log: discard()})
	code, body := get(t, h, "/ui/queues")
	if code != http.StatusOK {
		t.Fatalf("the queues page: %d", code)
	}
	contains(t, "the queues page", body, "12 cores, 24 GiB, gpu 4", "3 queues · 3 active apps · 1 active drivers",
		`id="queue-batch"`, `<td data-col="weight">2.5</td>`, `<td data-col="guarantee">4 cores, gpu 0.5</td>`,
		`<td data-col="limit">10 cores</td>`, `<td data-col="limit">none</td>`, `<td data-col="guarantee">none</td>`,
		`<td data-col="inuse">8 cores, 4 GiB</td>`, `<td data-col="inuse">1 core, 512 MiB, gpu 1</td>`, `<td data-col="inuse">nothing</td>`,
		"66.7%", "33.3%", "25.0%", "50.0%", "fair share: 6 cores, 3 GiB, gpu 2",
		`<span class="waiting">5 cores, 2560 MiB</span>`, `<td data-col="preemptions">3</td>`,
		"↳ etl: cores 4 from queue batch to be reclaimed in 25s")
	// The bars: batch over its share, etl owed, default at its (none).
	contains(t, "the bars", body, `class="use over" y="4" width="667"`, `x1="333"`,
		`class="use owed" y="4" width="250"`, `x1="500"`, `class="use fair" y="4" width="0"`)
	if n := strings.Count(body, `<tr class="reclaiming"`); n != 1 {
		t.Errorf("%d reclaiming lines, want etl's", n)
	}
	for _, path := range []string{"/ui/", "/ui/queues", "/ui/topology", "/ui/apps/app-20261124120000-0000"} {
		_, body := get(t, h, path)
		contains(t, path+"'s navigation", body, `<a href="/ui/queues">Queues</a>`)
	}
}

// A queue's name, a tenant's, a reclaiming line: the master's text, shown
// as text.
func TestQueuesPageEscapes(t *testing.T) {
	const evil = `<img src=x onerror=alert(1)>`
	qs := queues()
	qs.Queues[0].Name = evil
	qs.Queues[2].Reclaiming = "<script>alert(2)</script>"
	c := cluster(1, 1)
	c.ActiveApps[0].Queue, c.ActiveApps[0].Tenant = evil, "<b>acme</b>"
	h := Handler(Options{Source: &fakeSource{c: c, queues: qs}, Log: discard()})
	for _, path := range []string{"/ui/queues", "/ui/", "/ui/apps/app-20261124120000-0000"} {
		_, body := get(t, h, path)
		for _, raw := range []string{"<img", "<script>alert", "<b>acme"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s shows %q unescaped", path, raw)
			}
		}
	}
	_, body := get(t, h, "/ui/queues")
	contains(t, "the queues page", body, "&lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;alert(2)&lt;/script&gt;")
	_, body = get(t, h, "/ui/")
	contains(t, "the overview", body, "&lt;b&gt;acme&lt;/b&gt;", `href="/ui/queues#queue-%3cimg%20src%3dx%20onerror%3dalert%281%29%3e"`)
}

// The app and driver pages and the overview's lists say each one's queue,
// its priority when it has one and its tenant when a tenant submitted it.
func TestAppsAndDriversShowTheirQueue(t *testing.T) {
	c := cluster(2, 2)
	c.ActiveApps[0].Queue, c.ActiveApps[0].Priority, c.ActiveApps[0].Tenant = "etl", 5, "acme"
	c.ActiveDrivers = []wire.DriverStatus{{ID: "driver-1", State: wire.DriverRunning, Cores: 1, Command: []string{"pi"}, WorkerID: "w00000",
		Queue: "batch", Priority: -2}}
	h := Handler(Options{Source: &fakeSource{c: c}, Log: discard()})
	etl := `<a href="/ui/queues#queue-etl">etl</a> <span class="tag">priority 5</span> <span class="tag">tenant acme</span>`
	_, body := get(t, h, "/ui/")
	contains(t, "the overview", body, etl, `<a href="/ui/queues#queue-default">default</a></td>`,
		`<a href="/ui/queues#queue-batch">batch</a> <span class="tag">priority -2</span></td>`)
	_, body = get(t, h, "/ui/apps/app-20261124120000-0000")
	contains(t, "the app page", body, "queue "+etl)
	_, body = get(t, h, "/ui/apps/app-20261124120000-0001")
	contains(t, "an app without a queue", body, `queue <a href="/ui/queues#queue-default">default</a> · cores`)
	_, body = get(t, h, "/ui/drivers/driver-1")
	contains(t, "the driver page", body, `queue <a href="/ui/queues#queue-batch">batch</a> <span class="tag">priority -2</span> · 1 cores`)
}

// Only the leader knows the queues' use: a follower's page says so, links
// to the leader's, and shows no figures (none it could vouch for).
func TestQueuesPageOnAFollower(t *testing.T) {
	const leader = "https://10.0.0.2:7077"
	f := &fakeSource{c: cluster(1, 1), queues: queues()}
	f.follower(leader)
	h := Handler(Options{Source: f, Log: discard()})
	code, body := get(t, h, "/ui/queues")
	if code != http.StatusOK {
		t.Errorf("a follower's queues page: %d", code)
	}
	contains(t, "a follower's queues page", body, "follower's view", `href="`+leader+`/ui/"`, `href="`+leader+`/ui/queues"`, "Only the leader knows")
	if strings.Contains(body, `class="queue"`) || strings.Contains(body, "Capacity") {
		t.Error("a follower's queues page shows queues")
	}
	f.notLeader = httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoLeader, "no leader")
	code, body = get(t, h, "/ui/queues")
	contains(t, "the queues page with no leader", body, "follower's view", "No leader is known now.", "Only the leader knows")
	if code != http.StatusOK || strings.Contains(body, "the leader's queues</a>") {
		t.Errorf("with no leader: %d", code)
	}
	// Any other failure is the error page's.
	f.notLeader = httpx.Coded(http.StatusServiceUnavailable, wire.CodeLeaderPreparing, "loading its state")
	code, body = get(t, h, "/ui/queues")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "Cannot show this") || strings.Contains(body, "follower's view") {
		t.Errorf("a leader loading its state: %d %q", code, body)
	}
}
