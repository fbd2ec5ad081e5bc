package version

import "github.com/prometheus/client_golang/prometheus"

// Collector is the berth_build_info gauge, 1, labelled with this build: a
// dashboard shows a cluster running mixed versions by counting its series.
func Collector() prometheus.Collector {
	i := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "berth_build_info",
		Help:        "The build of this process, always 1: version, commit and Go version as labels.",
		ConstLabels: prometheus.Labels{"version": i.Version, "commit": i.Commit, "goversion": i.GoVersion},
	})
	g.Set(1)
	return g
}
