package master

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	return testproc.Scrape(t, base+"/metrics", "")
}

var value = testproc.Value

// The metrics agree with the API: after launches, and after a worker's
// death (DEAD, expired, its executors LOST).
func TestMetricsAgreeWithTheAPI(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	m, err := New(Config{ID: "m1", Advertise: base, WorkerTimeout: time.Second}, persistence.NewMemory(), nil, election.NewSingle("m1"), discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	go m.Run(t.Context(), ln)
	fakeWorker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) }))
	defer fakeWorker.Close()
	port := fakeWorker.Listener.Addr().(*net.TCPAddr).Port
	post := func(path string, body any) int {
		data, _ := json.Marshal(body)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testproc.Eventually(t, 10*time.Second, "the worker registered", func() bool {
		return post(wire.MasterAPI.RegisterWorker.Path(), wire.RegisterWorker{ID: "w1", Host: "127.0.0.1", Port: port, Address: fakeWorker.URL, Cores: 4, MemoryMB: 4096}) == http.StatusOK
	})
	// The worker heartbeats until the test silences it.
	silence, beats := make(chan struct{}), make(chan int, 1)
	go func() {
		n := 0
		defer func() { beats <- n }()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if post(wire.MasterAPI.WorkerHeartbeat.Path("w1"), wire.Heartbeat{}) == http.StatusOK {
				n++
			}
			select {
			case <-silence:
				return
			case <-tick.C:
			}
		}
	}()
	if code := post(wire.MasterAPI.RegisterApp.Path(), wire.AppDescription{Command: []string{"x"}, MaxCores: 3, CoresPerExecutor: 1, MemoryPerExecutorMB: 100}); code != http.StatusOK {
		t.Fatalf("app: %d", code)
	}
	holdLease(t, base)
	status := func() wire.ClusterStatus {
		resp, err := http.Get(base + wire.MasterAPI.Cluster.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st wire.ClusterStatus
		json.NewDecoder(resp.Body).Decode(&st)
		return st
	}
	testproc.Eventually(t, 10*time.Second, "3 executors", func() bool {
		st := status()
		return len(st.ActiveApps) == 1 && len(st.ActiveApps[0].Executors) == 3
	})
	close(silence)
	sent := <-beats
	st, f := status(), scrape(t, base)
	w := st.Workers[0]
	for _, c := range []struct {
		name string
		got  float64
		want int
	}{
		{"workers ALIVE", value(f, "berth_workers", "state", "ALIVE"), 1},
		{"cores total", value(f, "berth_cores", "kind", "total"), w.Cores},
		{"cores used", value(f, "berth_cores", "kind", "used"), w.CoresUsed},
		{"memory used (MiB)", value(f, "berth_memory_bytes", "kind", "used") / (1 << 20), w.MemoryUsedMB},
		{"apps RUNNING", value(f, "berth_apps", "state", "RUNNING"), 1},
		{"executors LAUNCHING", value(f, "berth_executors", "state", "LAUNCHING"), len(st.ActiveApps[0].Executors)},
		{"launches", value(f, "berth_master_executor_launches_total"), 3},
		{"heartbeats", value(f, "berth_master_heartbeats_total"), sent},
		{"leader", value(f, "berth_master_leader"), 1},
		{"ALIVE", value(f, "berth_master_status", "status", "ALIVE"), 1},
		{"leaderships", value(f, "berth_master_leadership_gained_total"), 1},
	} {
		if int(c.got) != c.want {
			t.Errorf("%s: the metrics say %v, the API %d", c.name, c.got, c.want)
		}
	}
	if value(f, "berth_master_writes_seconds", "outcome", "committed") < 3 || value(f, "berth_master_schedule_round_seconds") < 1 {
		t.Errorf("writes %v, scheduling rounds %v", value(f, "berth_master_writes_seconds", "outcome", "committed"), value(f, "berth_master_schedule_round_seconds"))
	}
	if value(f, "berth_http_request_duration_seconds", "route", "/v1/cluster", "method", "GET", "code", "200") < 1 {
		t.Error("no request recorded under the route /v1/cluster")
	}
	for _, fam := range f {
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				if l.GetName() == "route" && strings.Contains(l.GetValue(), "w1") {
					t.Errorf("a route label carries a path's value: %q", l.GetValue())
				}
			}
		}
	}

	// The worker goes silent: DEAD, expired once, its executors LOST.
	// The executors' ends are counted once their LOST is durable, a moment
	// after the worker shows DEAD.
	testproc.Eventually(t, 10*time.Second, "the worker DEAD", func() bool { return status().Workers[0].State == wire.WorkerDead })
	testproc.Eventually(t, 10*time.Second, "the executors' ends counted", func() bool {
		return value(scrape(t, base), "berth_master_executor_ends_total", "state", "LOST") >= 3
	})
	f = scrape(t, base)
	if v := value(f, "berth_workers", "state", "DEAD"); v != 1 {
		t.Errorf("workers DEAD: %v", v)
	}
	if v := value(f, "berth_master_worker_expiries_total"); v != 1 {
		t.Errorf("worker expiries: %v", v)
	}
	if v := value(f, "berth_master_executor_ends_total", "state", "LOST"); v != 3 {
		t.Errorf("executors LOST: %v, want 3", v)
	}
	if v := value(f, "berth_cores", "kind", "total"); v != 0 {
		t.Errorf("cores of the workers not DEAD: %v", v)
	}
}

// A failover counts a leadership and sets the recovery's duration; a
// follower reports no state of the leader's.
func TestMetricsAcrossAFailover(t *testing.T) {
	h := newHarness(t, nil)
	h.lead(nil)
	h.addWorker("w1", 4, 4096)
	h.failover()
	h.clock.advance(1500 * time.Millisecond)
	h.reregister(h.c.workers["w1"], "w1-1")
	h.commit()
	h.pass(h.c.cfg.RecoveryTimeout+time.Second, "w1")
	if h.c.status != wire.MasterAlive {
		t.Fatalf("status %s", h.c.status)
	}
	got := map[string]float64{}
	for _, c := range []struct {
		name string
		m    interface{ Write(*dto.Metric) error }
	}{{"leaderships", h.c.metrics.leadershipChanges}, {"recovery", h.c.metrics.recovery}} {
		var d dto.Metric
		c.m.Write(&d)
		got[c.name] = d.GetCounter().GetValue() + d.GetGauge().GetValue()
	}
	if got["leaderships"] != 2 || got["recovery"] < 1.5 {
		t.Errorf("after a failover: %v", got)
	}
	h.c.revoked()
	if s := h.c.stateCounts(); s.leading || len(s.workers) != 0 {
		t.Errorf("a follower's counts: %+v", s)
	}
}

// The dashboard queries and the reference name only metrics that exist,
// and the reference names every master metric.
func TestMetricsDocAndDashboardMatchTheRegistry(t *testing.T) {
	names := regexp.MustCompile(`berth_[a-z_]+`)
	doc, err := os.ReadFile("../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	dash, err := os.ReadFile("../deploy/grafana-berth.json")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, n := range names.FindAllString(string(doc), -1) {
		documented[n] = true
	}
	for _, n := range names.FindAllString(string(dash), -1) {
		n = strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count")
		if !documented[n] {
			t.Errorf("the dashboard queries %s, which docs/METRICS.md does not describe", n)
		}
	}
	m := newMetrics()
	m.reg.MustRegister(stateCollector{})
	descs := make(chan *prometheus.Desc, 100)
	m.reg.Describe(descs)
	close(descs)
	for d := range descs {
		if n := names.FindString(d.String()); n != "" && !documented[n] {
			t.Errorf("%s is not in docs/METRICS.md", n)
		}
	}
}

// holdLease keeps the only app's client connected (its event stream open)
// until the test ends, so that the app outlives its worker.
func holdLease(t *testing.T, base string) {
	t.Helper()
	var id string
	testproc.Eventually(t, 10*time.Second, "the app listed", func() bool {
		resp, err := http.Get(base + wire.MasterAPI.Cluster.Path())
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st wire.ClusterStatus
		if json.NewDecoder(resp.Body).Decode(&st) != nil || len(st.ActiveApps) != 1 {
			return false
		}
		id = st.ActiveApps[0].ID
		return true
	})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+wire.MasterAPI.AppEvents.Path(id), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the app's events: %s", resp.Status)
	}
	go func() { // drain the stream until the test's context ends it
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
	}()
}

// An idle leader reports every state of workers, apps, drivers and
// executors at 0: alerts on them see data, not an absent series.
func TestMetricsPresentAtZeroWhenIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	m, err := New(Config{ID: "m1", Advertise: base, WorkerTimeout: time.Second}, persistence.NewMemory(), nil, election.NewSingle("m1"), discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	go m.Run(t.Context(), ln)
	var f map[string]*dto.MetricFamily
	testproc.Eventually(t, 10*time.Second, "the master leading", func() bool {
		f = scrape(t, base)
		return value(f, "berth_master_leader") == 1
	})
	for _, c := range [][]string{
		{"berth_workers", "state", "ALIVE"}, {"berth_workers", "state", "DEAD"}, {"berth_workers", "state", "DECOMMISSIONING"},
		{"berth_apps", "state", "RUNNING"}, {"berth_apps", "state", "WAITING"},
		{"berth_drivers", "state", "RUNNING"}, {"berth_executors", "state", "RUNNING"},
	} {
		if got := value(f, c[0], c[1:]...); got != 0 {
			t.Errorf("%s{%s=%q} = %v on an idle leader, want 0 (-1: absent)", c[0], c[1], c[2], got)
		}
	}
}
