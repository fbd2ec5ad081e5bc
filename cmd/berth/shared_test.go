package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// queue set sends the flags given, and only those, as the QueueSpec:
// memory in its units, any other key a custom resource.
func TestQueueSet(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	two, no := 2.0, false
	for _, tc := range []struct {
		name string
		args []string
		want wire.QueueSpec
		out  string
	}{
		{"etl", []string{"queue", "set", "etl", "--weight", "2", "--guarantee", "cores=8,memory=16g,gpu=2", "--limit", "cores=32, memory=512m,gpu=0.5", "--preempt=false"},
			wire.QueueSpec{Weight: &two, Guarantee: &wire.Amount{Cores: 8, MemoryMB: 16384, Resources: wire.ResourceAmounts{"gpu": 2}},
				Limit: &wire.Amount{Cores: 32, MemoryMB: 512, Resources: wire.ResourceAmounts{"gpu": 0.5}}, Preempt: &no},
			"queue etl: weight 2, guarantee cores=8,memory=16g,gpu=2, limit cores=32,memory=512m,gpu=0.5, preempt false\n"},
		// Flags before the name too; "none" clears; memory=0 bounds nothing.
		{"adhoc", []string{"queue", "set", "--guarantee", "none", "--limit", "memory=0,fpga=1", "adhoc"},
			wire.QueueSpec{Guarantee: &wire.Amount{}, Limit: &wire.Amount{Resources: wire.ResourceAmounts{"fpga": 1}}},
			"queue adhoc: weight 1, guarantee -, limit fpga=1, preempt true\n"},
		{"etl", []string{"queue", "set", "etl"}, wire.QueueSpec{}, "queue etl: weight 1, guarantee -, limit -, preempt true\n"},
	} {
		res := berth(t, f.env(), tc.args...)
		if res.Code != 0 || res.Stdout != tc.out {
			t.Fatalf("%q: %+v, want stdout %q", tc.args, res, tc.out)
		}
		call := f.only(t)
		var got wire.QueueSpec
		if call.Method != "PUT" || call.URI != "/v1/queues/"+tc.name ||
			json.Unmarshal([]byte(call.Body), &got) != nil || !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%q sent %+v, want the spec %s", tc.args, call, mustJSON(t, tc.want))
		}
		if tc.want == (wire.QueueSpec{}) && call.Body != "{}" {
			t.Fatalf("queue set without flags sent %s, want {}: the master keeps what is left out", call.Body)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestQueueListAndDelete(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	res := berth(t, f.env(), "queue", "list")
	if res.Code != 0 {
		t.Fatalf("queue list: %+v", res)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Capacity: cores=64,memory=256g,gpu=8$`),
		regexp.MustCompile(`(?m)^NAME +WEIGHT +GUARANTEE +LIMIT +IN USE +DOMINANT SHARE +FAIR SHARE +WAITING +APPS +DRIVERS +PREEMPT$`),
		regexp.MustCompile(`(?m)^default +1 +- +- +cores=4,memory=4g +6\.2% +25\.0% +- +1 +0 +true$`),
		regexp.MustCompile(`(?m)^etl +2 +cores=8,memory=16g,gpu=2 +cores=32 +cores=2,memory=1\.5g,gpu=0\.5 +6\.2% +50\.0% +cores=6 +2 +1 +false$`),
		regexp.MustCompile(`(?m)^queue etl: reclaiming cores 6 from queue default$`),
	} {
		if !want.MatchString(res.Stdout) {
			t.Errorf("queue list lacks %s:\n%s", want, res.Stdout)
		}
	}
	if call := f.only(t); call.Method != "GET" || call.URI != "/v1/queues" {
		t.Fatalf("queue list sent %+v", call)
	}

	res = berth(t, f.env(), "queue", "list", "--json")
	var got wire.Queues
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &got) != nil || !reflect.DeepEqual(got, testQueues()) {
		t.Fatalf("queue list --json: %+v", res)
	}
	f.only(t)
	checkDelete(t, f, "queue", "etl", "/v1/queues/etl")
}

// checkDelete runs berth KIND delete NAME, which must say so and send a
// DELETE of path.
func checkDelete(t *testing.T, f *sharedMaster, kind, name, path string) {
	t.Helper()
	res := berth(t, f.env(), kind, "delete", name)
	if call := f.only(t); res.Code != 0 || res.Stdout != "deleted "+kind+" "+name+"\n" || call.Method != "DELETE" || call.URI != path {
		t.Fatalf("%s delete: %+v, sent %+v", kind, res, call)
	}
}

// The queue's name and the master's reasons are shown escaped.
func TestQueueListEscapes(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	f.mu.Lock()
	f.queues.Queues[1].Name, f.queues.Queues[1].Reclaiming = hostileText, hostileText
	f.mu.Unlock()
	res := berth(t, f.env(), "queue", "list")
	checkNoRawControls(t, "queue list", res.Stdout)
	if res.Code != 0 || strings.Count(res.Stdout, hostileEscaped) != 3 {
		t.Fatalf("queue list of a hostile queue: %+v; want its name twice and its reason once, escaped", res)
	}
}

// tenant create prints the token alone on the last line of its output.
func TestTenantCreate(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	res := berth(t, f.env(), "tenant", "create", "acme", "--queues", "etl, adhoc", "--unix-user", "acme")
	if res.Code != 0 || res.Stdout != testTenantToken+"\n" || !strings.Contains(res.Stderr, "keep it safe") {
		t.Fatalf("tenant create: %+v", res)
	}
	lines := strings.Split(strings.TrimSuffix(res.Stderr+res.Stdout, "\n"), "\n")
	if lines[len(lines)-1] != testTenantToken {
		t.Fatalf("last line of the output %q, want the token alone", lines[len(lines)-1])
	}
	call := f.only(t)
	if call.Method != "POST" || call.URI != "/v1/tenants/acme" || call.Body != `{"queues":["etl","adhoc"],"unixUser":"acme"}` {
		t.Fatalf("tenant create sent %+v", call)
	}
}

// A creation whose outcome is unknown is not repeated; berth says how to
// find out and start over.
func TestTenantCreateUnknownOutcome(t *testing.T) {
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer drop.Close()
	res := berth(t, []string{"BERTH_MASTER=" + drop.URL}, "tenant", "create", "acme", "--queues", "etl")
	if res.Code != exitUnknown || res.Stdout != "" || !strings.Contains(res.Stderr, "outcome unknown") ||
		!strings.Contains(res.Stderr, "\nthe tenant may have been created") || !strings.Contains(res.Stderr, "berth tenant delete acme") {
		t.Fatalf("tenant create against a master that drops it: %+v", res)
	}
}

func TestTenantListAndDelete(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	res := berth(t, f.env(), "tenant", "list")
	if res.Code != 0 || !regexp.MustCompile(`(?m)^NAME +QUEUES +DEFAULT QUEUE +UNIX USER +CREATED\nacme +etl,adhoc +- +acme +2026-03-0\d \d\d:\d\d:00\nbeta +default +default +- `).MatchString(res.Stdout) {
		t.Fatalf("tenant list: %+v", res)
	}
	f.only(t)
	res = berth(t, f.env(), "tenant", "list", "--json")
	var ts wire.Tenants
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &ts) != nil || len(ts.Tenants) != 2 || ts.Tenants[0].UnixUser != "acme" {
		t.Fatalf("tenant list --json: %+v", res)
	}
	f.only(t)
	checkDelete(t, f, "tenant", "acme", "/v1/tenants/acme")
}

func TestAudit(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	res := berth(t, f.env(), "audit", "--since", "1h", "--tenant", "acme")
	if res.Code != 0 ||
		!regexp.MustCompile(`(?m)^TIME +PRINCIPAL +TENANT +ROUTE +TARGET +OUTCOME$`).MatchString(res.Stdout) ||
		!regexp.MustCompile(`(?m)^2026-03-01 12:30:00 +secret +- +PUT /v1/queues/\{id\} +etl +ok$`).MatchString(res.Stdout) ||
		!regexp.MustCompile(`(?m)^2026-03-01 12:31:00 +tenant:acme +acme +POST /v1/drivers +- +forbidden \(403\)$`).MatchString(res.Stdout) {
		t.Fatalf("audit: %+v", res)
	}
	if call := f.only(t); call.Method != "GET" || call.URI != "/v1/audit?since=1h0m0s&tenant=acme" {
		t.Fatalf("audit sent %+v", call)
	}
	res = berth(t, f.env(), "audit", "--json")
	var a wire.Audit
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &a) != nil || len(a.Entries) != 2 || a.Entries[1].Principal != "tenant:acme" {
		t.Fatalf("audit --json: %+v", res)
	}
	if call := f.only(t); call.URI != "/v1/audit" {
		t.Fatalf("audit without flags sent %+v", call)
	}
}

// run and submit put --queue and --priority in the description.
func TestRunAndSubmitInAQueue(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	if res := berth(t, f.env(), "submit", "--queue", "etl", "--priority", "7", "--stop-after-disconnect", "90s", "--", "x"); res.Code != 0 {
		t.Fatalf("submit: %+v", res)
	}
	var d wire.DriverDescription
	if call := f.only(t); json.Unmarshal([]byte(call.Body), &d) != nil || d.Queue != "etl" || d.Priority != 7 || d.StopAfterDisconnect.D() != 90*time.Second {
		t.Fatalf("submit sent %+v", call)
	}
	if res := berth(t, f.env(), "run", "--queue", "adhoc", "--priority", "-3", "--stop-after-disconnect", "2m", "--", "x"); res.Code != 0 {
		t.Fatalf("run: %+v", res)
	}
	var a wire.AppDescription
	if call := f.requests()[0]; call.URI != "/v1/apps" || json.Unmarshal([]byte(call.Body), &a) != nil || a.Queue != "adhoc" || a.Priority != -3 ||
		a.StopAfterDisconnect.D() != 2*time.Minute || !strings.Contains(call.Body, `"stopAfterDisconnect":"2m0s"`) {
		t.Fatalf("run sent %+v", call)
	}
}

// --token (or BERTH_TOKEN) goes out as the bearer; with the secret, it is
// refused before any request.
func TestToken(t *testing.T) {
	f := newSharedMaster(t, testTenantToken)
	master := "BERTH_MASTER=" + f.srv.URL
	for _, env := range [][]string{{master, "BERTH_TOKEN=" + testTenantToken}, {master}} {
		args := []string{"queue", "list"}
		if len(env) == 1 {
			args = append([]string{"--token", testTenantToken}, args...)
		}
		if res := berth(t, env, args...); res.Code != 0 {
			t.Fatalf("%v %q: %+v", env, args, res)
		}
		if call := f.only(t); call.Auth != "Bearer "+testTenantToken {
			t.Fatalf("sent Authorization %q, want the token", call.Auth)
		}
	}
	res := berth(t, []string{master, "BERTH_TOKEN=bt.acme.wrong"}, "queue", "list")
	if res.Code != 1 || !strings.Contains(res.Stderr, "refused the token") {
		t.Fatalf("a wrong token: %+v", res)
	}
	f.only(t)
	res = berth(t, []string{master, "BERTH_TOKEN=" + testTenantToken}, "--secret", testSecret, "queue", "list")
	if res.Code != 1 || !strings.Contains(res.Stderr, "--token and --secret") || len(f.requests()) != 0 {
		t.Fatalf("--token with --secret: %+v", res)
	}
}

func TestSharedBadValuesNameTheFlag(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	set := func(args ...string) []string { return append([]string{"queue", "set", "etl"}, args...) }
	cases := []testproc.BadFlag{
		{Args: set("--weight", "0"), Flag: "--weight"},
		{Args: set("--weight", "-1"), Flag: "--weight"},
		{Args: set("--weight", "heavy"), Flag: "--weight"},
		{Args: []string{"queue", "set", "--weight", "0", "etl"}, Flag: "--weight"},
		{Env: []string{"BERTH_QUEUE_SET_WEIGHT=0"}, Args: set(), Flag: "--weight"},
		{Args: set("--guarantee", "cores"), Flag: "--guarantee"},
		{Args: set("--guarantee", "cores=8,,gpu=1"), Flag: "--guarantee"},
		{Args: set("--guarantee", "cores=1.5"), Flag: "--guarantee"},
		{Args: set("--guarantee", "cores=-1"), Flag: "--guarantee"},
		{Args: set("--guarantee", "memory=12q"), Flag: "--guarantee"},
		{Args: set("--guarantee", "gpu=lots"), Flag: "--guarantee"},
		{Args: set("--guarantee", "gpu=0"), Flag: "--guarantee"},
		{Args: set("--guarantee", "GPU=1"), Flag: "--guarantee"},
		{Args: set("--guarantee", "cores=1,cores=2"), Flag: "--guarantee"},
		{Args: set("--limit", "memory="), Flag: "--limit"},
		{Args: set("--preempt=maybe"), Flag: "--preempt"},
		{Args: set("--preempt", "yes"), Flag: "--preempt"},
		{Args: []string{"queue", "set", "Bad/Name"}, Flag: `queue "Bad/Name"`},
		{Args: []string{"run", "--queue", "ETL", "--", "x"}, Flag: "--queue"},
		{Args: []string{"submit", "--queue", "-etl", "--", "x"}, Flag: "--queue"},
		{Args: []string{"submit", "--priority", "1000001", "--", "x"}, Flag: "--priority"},
		{Args: []string{"run", "--priority", "-1000001", "--", "x"}, Flag: "--priority"},
		{Args: []string{"run", "--priority", "high", "--", "x"}, Flag: "--priority"},
		{Args: []string{"run", "--stop-after-disconnect", "500ms", "--", "x"}, Flag: "--stop-after-disconnect"},
		{Args: []string{"submit", "--stop-after-disconnect", "-1m", "--", "x"}, Flag: "--stop-after-disconnect"},
		{Args: []string{"submit", "--stop-after-disconnect", "1y", "--", "x"}, Flag: "--stop-after-disconnect"},
		{Args: []string{"tenant", "create", "acme"}, Flag: "--queues"},
		{Args: []string{"tenant", "create", "acme", "--queues", "etl,Bad"}, Flag: "--queues"},
		{Args: []string{"audit", "--since", "-1h"}, Flag: "--since"},
		{Args: []string{"audit", "--since", "soon"}, Flag: "--since"},
	}
	testproc.CheckBadFlags(t, berthBin, 1, append(cleanEnv(), f.env()...), cases)
	if calls := f.requests(); len(calls) != 0 {
		t.Fatalf("bad values still sent %+v", calls)
	}
}
