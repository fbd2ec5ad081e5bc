package ui

import (
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// A Spark app's page links to its driver's own web UI (the plugin gives
// it as uiUrl) while it runs; an ended app's does not (the UI is gone with
// its driver). The address is escaped as any other text.
func TestAnAppsPageLinksToItsOwnUI(t *testing.T) {
	c := cluster(2, 2)
	c.ActiveApps[0].UIURL = "http://127.0.0.9:4040"
	c.ActiveApps[1].UIURL = `http://x/"><script>alert(1)</script>`
	h := Handler(Options{Source: &fakeSource{c: c}, Log: discard()})
	_, body := get(t, h, "/ui/apps/"+c.ActiveApps[0].ID)
	contains(t, "a running Spark app's page", body, `its own web UI: <a href="http://127.0.0.9:4040">http://127.0.0.9:4040</a>`)
	_, body = get(t, h, "/ui/apps/"+c.ActiveApps[1].ID)
	if strings.Contains(body, "<script>alert(1)") {
		t.Errorf("an app's UI address is not escaped: %s", body)
	}
	c.ActiveApps[0].State = wire.AppFinished
	_, body = get(t, h, "/ui/apps/"+c.ActiveApps[0].ID)
	if strings.Contains(body, "its own web UI") {
		t.Errorf("an ended app's page links to its driver's UI, gone with it")
	}
}
