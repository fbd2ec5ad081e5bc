package wire

import (
	"strings"
	"testing"
)

// The web UI's routes a tenant may use are the pages of an app and of a
// driver, the log pages and the sign-out, and no other route of either
// API is declared for tenants' UI sessions; every other UI route is an
// operator's, but the redirect, the sign-in and the assets, which are
// open. (A page added under /ui/ is an operator's unless declared here.)
func TestUIRoutesOpenToTenantsAreTheDeclaredOnes(t *testing.T) {
	tenants := map[string]bool{"GET /ui/apps/{id}": true, "GET /ui/drivers/{id}": true, "GET /ui/logs": true, "POST /ui/sign-out": true}
	open := map[string]bool{"GET /{$}": true, "GET /ui/sign-in": true, "POST /ui/sign-in": true, "GET /ui/static/": true}
	for _, api := range []any{MasterAPI, WorkerAPI} {
		seen := 0
		for _, e := range Endpoints(api) {
			ui := strings.HasPrefix(e.Pattern, "/ui/") || e.Pattern == "/{$}"
			want := AccessOperator
			switch {
			case tenants[e.Mux()]:
				want, seen = AccessTenantUI, seen+1
			case open[e.Mux()]:
				want = AccessOpen
			case !ui:
				if e.Access == AccessTenantUI {
					t.Errorf("%s, not the UI's, is declared %s", e.Mux(), e.Access)
				}
				continue
			}
			if e.Access != want {
				t.Errorf("%s is declared %q, want %q", e.Mux(), e.Access, want)
			}
		}
		if seen != len(tenants) {
			t.Errorf("%d of the tenants' UI routes declared, want %d", seen, len(tenants))
		}
	}
	if s := AccessTenantUI.String(); !strings.Contains(s, "tenant") || !strings.Contains(s, "operators") {
		t.Errorf("AccessTenantUI reads %q", s)
	}
}
