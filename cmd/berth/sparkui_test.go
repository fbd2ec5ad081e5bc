package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// berth status ends a running Spark app's line with its driver's own web
// UI (the plugin's uiUrl), as Spark standalone's master page links to it;
// an ended app's line does not (the UI is gone with its driver).
func TestStatusLinksASparkAppsUI(t *testing.T) {
	st := testCluster()
	st.ActiveApps[0].UIURL = "http://127.0.0.9:4040"
	st.CompletedApps[0].UIURL = "http://127.0.0.9:4041"
	var out bytes.Buffer
	if err := printStatus(&out, st, time.Now()); err != nil {
		t.Fatal(err)
	}
	var running, ended string
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "app-1"):
			running = line
		case strings.HasPrefix(line, "app-0"):
			ended = line
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(running), "UI http://127.0.0.9:4040") {
		t.Errorf("the running Spark app's line %q does not end with its UI", running)
	}
	if ended == "" || strings.Contains(ended, "4041") {
		t.Errorf("the ended app's line %q links to a UI gone with its driver", ended)
	}
	st.ActiveApps[0].State = wire.AppWaiting // waiting for executors, its driver up: still linked
	out.Reset()
	printStatus(&out, st, time.Now())
	if !strings.Contains(out.String(), "UI http://127.0.0.9:4040") {
		t.Errorf("a waiting Spark app's line lacks its UI:\n%s", out.String())
	}
}
