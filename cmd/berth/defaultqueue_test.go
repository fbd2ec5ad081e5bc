package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// A tenant's default queue: tenant create --default-queue sends it as the
// TenantSpec's defaultQueue (from the environment too), one not among
// --queues is refused before anything is sent, tenant list shows it (or
// the tenant's only queue, its default then), and run's and submit's
// --queue say that a tenant's submission naming none goes there.
func TestTenantDefaultQueue(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	for _, tc := range []struct {
		args []string
		env  []string
	}{
		{args: []string{"tenant", "create", "acme", "--queues", "etl,adhoc", "--default-queue", "adhoc"}},
		{args: []string{"tenant", "create", "acme", "--queues", "etl,adhoc"}, env: []string{"BERTH_TENANT_CREATE_DEFAULT_QUEUE=adhoc"}},
	} {
		res := berth(t, append(f.env(), tc.env...), tc.args...)
		if res.Code != 0 || res.Stdout != testTenantToken+"\n" {
			t.Fatalf("%q %q: %+v", tc.env, tc.args, res)
		}
		if call := f.only(t); call.Method != "POST" || call.URI != "/v1/tenants/acme" || call.Body != `{"queues":["etl","adhoc"],"defaultQueue":"adhoc"}` {
			t.Fatalf("%q %q sent %+v", tc.env, tc.args, call)
		}
	}

	res := berth(t, f.env(), "tenant", "create", "acme", "--queues", "etl,adhoc", "--default-queue", "batch")
	if res.Code != 1 || !strings.Contains(res.Stderr, "--default-queue batch: want one of --queues (etl, adhoc)") {
		t.Fatalf("a default queue not among --queues: %+v", res)
	}
	if calls := f.requests(); len(calls) != 0 {
		t.Fatalf("a refused default queue was still sent: %+v", calls)
	}

	list := httptest.NewServer(httpx.RequireSecret(testSecret, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, wire.Tenants{Tenants: []wire.TenantStatus{
			{Name: "acme", Queues: []string{"etl", "adhoc"}, DefaultQueue: "adhoc"},
			{Name: "beta", Queues: []string{"etl"}},
			{Name: "gamma", Queues: []string{"etl", "adhoc"}},
		}})
	})))
	defer list.Close()
	res = berth(t, []string{"BERTH_MASTER=" + list.URL, "BERTH_SECRET=" + testSecret}, "tenant", "list")
	if res.Code != 0 || !regexp.MustCompile(`(?m)^acme +etl,adhoc +adhoc +- .*\nbeta +etl +etl +- .*\ngamma +etl,adhoc +- +- `).MatchString(res.Stdout) {
		t.Fatalf("tenant list with default queues: %+v", res)
	}

	for _, cmd := range []string{"run", "submit"} {
		res := berth(t, nil, cmd, "--help")
		if help := strings.Join(strings.Fields(res.Stdout), " "); res.Code != 0 ||
			!strings.Contains(help, "--queue QUEUE the QUEUE to run in (default: for a tenant, its default queue, set by tenant create --default-queue, else its only queue; otherwise the queue named default)") {
			t.Errorf("%s --help does not say where a tenant's submission naming no queue goes:\n%s", cmd, res.Stdout)
		}
	}
}
