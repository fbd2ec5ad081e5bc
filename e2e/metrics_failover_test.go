package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestMetricsAgreeWithTheAPIAcrossAFailover scrapes the real master's
// /metrics over HTTP, parses it with Prometheus' own parser and compares
// its gauges with the same master's GET /v1/cluster: workers, apps,
// drivers and executors by state, cores and memory in total and in use.
// They agree on the leader with an app running, and on the new leader
// after a kill -9 of the old one, once the workers and the app are back;
// a follower says it does not lead and reports none of the leader's
// gauges.
func TestMetricsAgreeWithTheAPIAcrossAFailover(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, []string{"--worker-timeout", "10s", "--recovery-timeout", "30s"}, "w1", "w2")
	appID, _, before := hc.runLongApp("metrics-failover", 3)
	old := hc.master(before.MasterID)
	hc.metricsAgree(old, "the leader")

	old.Proc().Kill()
	newLeader, _ := hc.leader(haFailoverBound+10*time.Second, old)
	hc.waitWorkers(20*time.Second, "w1", "w2")
	hc.runningApp(appID, 3, 20*time.Second)
	hc.metricsAgree(newLeader, "the new leader")
	for _, m := range hc.others(old, newLeader) {
		f, err := scrapeMetrics(m)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := f["berth_master_leader{}"]; !ok || v != 0 {
			t.Errorf("follower %s: berth_master_leader %v (exposed: %v)", m.ID, v, ok)
		}
		for series := range f {
			if strings.HasPrefix(series, "berth_workers{") || strings.HasPrefix(series, "berth_cores{") {
				t.Errorf("follower %s reports the leader's gauge %s", m.ID, series)
			}
		}
	}
}

// metricsAgree checks that m's gauges agree with m's own view of the
// cluster. The two are separate reads: the view is read before and after
// the scrape, and compared only when it did not change in between.
func (cl *cluster) metricsAgree(m *testcluster.Master, who string) {
	cl.t.Helper()
	testproc.Eventually(cl.t, 15*time.Second, who+"'s view, unchanged over a scrape", func() error {
		st, err := cl.view(m)
		if err != nil {
			return err
		}
		if st.View != wire.ViewLeader || st.MasterID != m.ID || st.Status != wire.MasterAlive {
			return fmt.Errorf("%s answers %s's %s view, %s", m.ID, st.MasterID, st.View, st.Status)
		}
		scraped, err := scrapeMetrics(m)
		if err != nil {
			return err
		}
		after, err := cl.view(m)
		if err != nil {
			return err
		}
		want := gaugesOf(st)
		if !maps.Equal(want, gaugesOf(after)) {
			return fmt.Errorf("the view changed during the scrape")
		}
		got := map[string]float64{}
		for series, v := range scraped {
			family, _, _ := strings.Cut(series, "{")
			if slices.Contains(comparedFamilies, family) {
				got[series] = v
			}
		}
		for _, k := range slices.Sorted(maps.Keys(merged(want, got))) {
			if got[k] != want[k] {
				cl.t.Errorf("%s: %s is %v in /metrics, %v by /v1/cluster", who, k, got[k], want[k])
			}
		}
		if scraped["berth_master_leader{}"] != 1 {
			cl.t.Errorf("%s: berth_master_leader %v", who, scraped["berth_master_leader{}"])
		}
		return nil
	})
}

// comparedFamilies are the gauges a view of the cluster tells.
var comparedFamilies = []string{"berth_workers", "berth_apps", "berth_drivers", "berth_executors", "berth_cores", "berth_memory_bytes"}

// gaugesOf is what comparedFamilies should say for st, keyed as
// scrapeMetrics keys its series.
func gaugesOf(st wire.ClusterStatus) map[string]float64 {
	out := map[string]float64{}
	add := func(family, label, value string, v float64) { out[family+"{"+label+"="+value+"}"] += v }
	for _, w := range st.Workers {
		add("berth_workers", "state", string(w.State), 1)
		if w.State != wire.WorkerDead {
			add("berth_cores", "kind", "total", float64(w.Cores))
			add("berth_cores", "kind", "used", float64(w.CoresUsed))
			add("berth_memory_bytes", "kind", "total", float64(w.MemoryMB)*(1<<20))
			add("berth_memory_bytes", "kind", "used", float64(w.MemoryUsedMB)*(1<<20))
		}
	}
	for _, a := range st.ActiveApps {
		add("berth_apps", "state", string(a.State), 1)
		for _, e := range a.Executors {
			if !e.State.Finished() {
				add("berth_executors", "state", string(e.State), 1)
			}
		}
	}
	for _, d := range st.ActiveDrivers {
		add("berth_drivers", "state", string(d.State), 1)
	}
	return out
}

// scrapeMetrics reads m's /metrics with the secret and parses it with
// Prometheus' own parser; each series is keyed family{name=value,...}
// (labels in the order exposed) with its gauge's or counter's value.
func scrapeMetrics(m *testcluster.Master) (map[string]float64, error) {
	r, err := call(http.MethodGet, m.URL+wire.MasterAPI.Metrics.Path(), secret, nil)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", m.ID, err)
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %d %s", m.ID, r.status, r.body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(r.body))
	if err != nil {
		return nil, fmt.Errorf("parsing %s's /metrics: %w", m.ID, err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, s := range f.Metric {
			var labels []string
			for _, l := range s.Label {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case s.Gauge != nil:
				out[key] = s.Gauge.GetValue()
			case s.Counter != nil:
				out[key] = s.Counter.GetValue()
			}
		}
	}
	return out, nil
}

// merged is the union of two maps' keys (the values of b win).
func merged(a, b map[string]float64) map[string]float64 {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
