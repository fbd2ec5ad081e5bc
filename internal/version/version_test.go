package version

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/berth-cluster/berth", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4c89b34e0c1d"},
			{Key: "vcs.time", Value: "2026-11-26T19:34:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	i := fromBuildInfo(bi, "v0.4.0-3-g4c89b34-dirty", "2026-11-26T20:00:00Z")
	want := Info{Version: "v0.4.0-3-g4c89b34-dirty", Commit: "4c89b34e0c1d", CommitTime: "2026-11-26T19:34:00Z",
		Modified: true, BuildTime: "2026-11-26T20:00:00Z", GoVersion: "go1.26.8", Platform: i.Platform}
	if i != want {
		t.Errorf("got %+v\nwant %+v", i, want)
	}
	// A build with no -X and no VCS stamp (go build -buildvcs=false, or a
	// tarball of the source) says so rather than guess.
	i = fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "", "")
	if i.Version != "devel" || i.Commit != Unknown || i.CommitTime != Unknown || i.BuildTime != Unknown || i.Modified {
		t.Errorf("unstamped build: %+v", i)
	}
	// go install module@v1.2.3 records the module's version.
	if i := fromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "", ""); i.Version != "v1.2.3" {
		t.Errorf("module version: %+v", i)
	}
	if i := fromBuildInfo(nil, "", ""); i.Version != "devel" || i.GoVersion == "" {
		t.Errorf("no build info: %+v", i)
	}
}

func TestWrite(t *testing.T) {
	var b strings.Builder
	i := Info{Version: "v1", Commit: "abc", CommitTime: "t1", Modified: true, BuildTime: "t2", GoVersion: "go1.26.8", Platform: "linux/arm64"}
	if err := i.Write(&b, "worker"); err != nil {
		t.Fatal(err)
	}
	want := "worker v1\ncommit:      abc (modified)\ncommit time: t1\nbuilt:       t2\ngo:          go1.26.8 linux/arm64\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	i := Get()
	want := `# HELP berth_build_info The build of this process, always 1: version, commit and Go version as labels.
# TYPE berth_build_info gauge
berth_build_info{commit="` + i.Commit + `",goversion="` + i.GoVersion + `",version="` + i.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "berth_build_info"); err != nil {
		t.Error(err)
	}
}
