package e2e

// Bad settings of the shared cluster, through the API and the CLI.

import (
	"fmt"
	"maps"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// TestQueuesBadInputRefused sends the master bad queue settings (weight 0
// or negative, a guarantee above what the one worker of 2 cores and 1 GB
// offers, alone or added to another queue's, a guarantee or a limit of a
// resource no worker offers, negative amounts, a guarantee above the
// limit, malformed JSON, an unknown field, a queue name with bad
// characters), submissions into an unknown queue and bad tenants, through
// the API and then through bin/berth. Each is a 4xx whose reason names
// the field (the CLI: the flag, or the setting the master refused);
// afterwards GET /v1/queues and the tenants are exactly as before and no
// app or driver exists. Each refusal the master saw is in the audit log
// as a refusal of the operator.
func TestQueuesBadInputRefused(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{flags: queuesFlags(time.Second, time.Second), workers: []string{"w1"}, cores: 2, memory: "1g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"good": {Weight: weightOf(2), Guarantee: &wire.Amount{Cores: 1}, Limit: &wire.Amount{Cores: 2}}})
	cl.createTenant(led, "tg", "good")
	queuesBefore, err := cl.c.Queues(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tenantsBefore, err := cl.c.Tenants(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(when string) {
		t.Helper()
		qs, err := cl.c.Queues(callCtx(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := queueSettings(qs), queueSettings(queuesBefore); !maps.Equal(got, want) {
			t.Errorf("GET /v1/queues %s:\n%v\nbefore:\n%v", when, got, want)
		}
		if ts, err := cl.c.Tenants(callCtx(t, 10*time.Second)); err != nil || fmt.Sprint(ts) != fmt.Sprint(tenantsBefore) {
			t.Errorf("tenants %s: %+v %v, before %+v", when, ts, err, tenantsBefore)
		}
		st := cl.mustStatus()
		if len(st.ActiveApps)+len(st.CompletedApps)+len(st.ActiveDrivers)+len(st.CompletedDrivers) != 0 {
			t.Errorf("apps %v and drivers %v %s, want none", appIDs(st), driverIDs(st), when)
		}
	}

	leader := cl.master("m1").URL
	api := wire.MasterAPI
	badApp := cl.termApp("lost", "nope", 1, t.TempDir(), true)
	for _, c := range []struct {
		name     string
		route    wire.Endpoint
		target   string // the path's {id}
		body     string
		want     int
		code     wire.ErrorCode
		mentions []string // what the reason must name
	}{
		{"weight 0", api.PutQueue.Endpoint, "q1", `{"weight": 0}`, 400, wire.CodeBadRequest, []string{"weight"}},
		{"negative weight", api.PutQueue.Endpoint, "q1", `{"weight": -1}`, 400, wire.CodeBadRequest, []string{"weight"}},
		{"weight 0 on an existing queue", api.PutQueue.Endpoint, "good", `{"weight": 0}`, 400, wire.CodeBadRequest, []string{"weight"}},
		{"a guarantee of more cores than the workers have", api.PutQueue.Endpoint, "q1", `{"guarantee": {"cores": 3}}`, 400, wire.CodeBadRequest, []string{"guarantee", "cores"}},
		{"a guarantee of more memory than the workers have", api.PutQueue.Endpoint, "q1", `{"guarantee": {"memoryMB": 4096}}`, 400, wire.CodeBadRequest, []string{"guarantee", "MB"}},
		{"guarantees adding up above the capacity", api.PutQueue.Endpoint, "q1", `{"guarantee": {"cores": 2}}`, 400, wire.CodeBadRequest, []string{"guarantee"}},
		{"an existing queue's guarantee raised above the capacity", api.PutQueue.Endpoint, "good", `{"guarantee": {"cores": 3}}`, 400, wire.CodeBadRequest, []string{"guarantee"}},
		{"a guarantee of an unknown resource", api.PutQueue.Endpoint, "q1", `{"guarantee": {"resources": {"tpu": 1}}}`, 400, wire.CodeBadRequest, []string{"guarantee", "tpu"}},
		{"a limit of an unknown resource", api.PutQueue.Endpoint, "q1", `{"limit": {"resources": {"tpu": 1}}}`, 400, wire.CodeBadRequest, []string{"limit", "tpu"}},
		{"a misnamed resource", api.PutQueue.Endpoint, "q1", `{"limit": {"resources": {"GPU!": 1}}}`, 400, wire.CodeBadRequest, []string{"limit", "GPU!"}},
		{"negative cores", api.PutQueue.Endpoint, "q1", `{"guarantee": {"cores": -1}}`, 400, wire.CodeBadRequest, []string{"guarantee"}},
		{"a guarantee above the limit", api.PutQueue.Endpoint, "q1", `{"guarantee": {"memoryMB": 512}, "limit": {"memoryMB": 256}}`, 400, wire.CodeBadRequest, []string{"guarantee", "limit"}},
		{"malformed JSON", api.PutQueue.Endpoint, "q2", `{"weight": `, 400, wire.CodeBadRequest, nil},
		{"trailing data", api.PutQueue.Endpoint, "q2", `{"weight": 1} {}`, 400, wire.CodeBadRequest, nil},
		{"an unknown field", api.PutQueue.Endpoint, "q2", `{"wieght": 1}`, 400, wire.CodeBadRequest, []string{"wieght"}},
		{"a weight as a string", api.PutQueue.Endpoint, "q2", `{"weight": "2"}`, 400, wire.CodeBadRequest, []string{"weight"}},
		{"an upper-case name", api.PutQueue.Endpoint, "Bad", `{"weight": 1}`, 400, wire.CodeBadRequest, []string{`"Bad"`}},
		{"a name with a space", api.PutQueue.Endpoint, "a b", `{"weight": 1}`, 400, wire.CodeBadRequest, []string{`"a b"`}},
		{"a name starting with a dash", api.PutQueue.Endpoint, "-x", `{"weight": 1}`, 400, wire.CodeBadRequest, []string{`"-x"`}},
		{"a name with an accent", api.PutQueue.Endpoint, "café", `{"weight": 1}`, 400, wire.CodeBadRequest, []string{"caf"}},
		{"a name of 64 characters", api.PutQueue.Endpoint, strings.Repeat("q", 64), `{"weight": 1}`, 400, wire.CodeBadRequest, []string{"63"}},
		{"deleting the default queue", api.DeleteQueue.Endpoint, wire.DefaultQueue, "", 409, wire.CodeWrongState, []string{wire.DefaultQueue}},
		{"deleting an unknown queue", api.DeleteQueue.Endpoint, "nope", "", 404, wire.CodeUnknownQueue, []string{"nope"}},
		{"an app in an unknown queue", api.RegisterApp.Endpoint, "", string(jsonOf(t, badApp)), 400, wire.CodeUnknownQueue, []string{`"nope"`}},
		{"a driver in an unknown queue", api.SubmitDriver.Endpoint, "", `{"command": ["true"], "cores": 1, "memoryMB": 64, "queue": "nope"}`, 400, wire.CodeUnknownQueue, []string{`"nope"`}},
		{"an app in a misnamed queue", api.RegisterApp.Endpoint, "", `{"name": "x", "command": ["true"], "queue": "No Such"}`, 400, wire.CodeBadRequest, []string{"No Such"}},
		{"a tenant of an unknown queue", api.CreateTenant.Endpoint, "tx", `{"queues": ["nope"]}`, 400, wire.CodeUnknownQueue, []string{`"nope"`}},
		{"a tenant of no queue", api.CreateTenant.Endpoint, "tx", `{"queues": []}`, 400, wire.CodeBadRequest, []string{"queues"}},
		{"a tenant misnamed", api.CreateTenant.Endpoint, "Bad.Name", `{"queues": ["good"]}`, 400, wire.CodeBadRequest, []string{"Bad.Name"}},
		{"a tenant that exists", api.CreateTenant.Endpoint, "tg", `{"queues": ["good"]}`, 409, wire.CodeWrongState, []string{"tg"}},
		{"deleting an unknown tenant", api.DeleteTenant.Endpoint, "nobody", "", 404, wire.CodeUnknownTenant, []string{"nobody"}},
	} {
		path := c.route.Pattern
		if c.target != "" {
			path = strings.Replace(path, "{id}", url.PathEscape(c.target), 1)
		}
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		a, err := call(c.route.Method, leader+path, secret, body)
		if err != nil {
			t.Fatal(err)
		}
		e := errorBody(a)
		if a.status != c.want || e.Code != c.code || e.Error == "" {
			t.Errorf("%s: %s %s %s: %d %s; want %d %s with a reason", c.name, c.route.Method, path, c.body, a.status, strings.TrimSpace(a.body), c.want, c.code)
		}
		for _, m := range c.mentions {
			if !strings.Contains(e.Error, m) {
				t.Errorf("%s: the reason %q does not name %q", c.name, e.Error, m)
			}
		}
		target := c.target
		if c.route == api.RegisterApp.Endpoint || c.route == api.SubmitDriver.Endpoint {
			target = refusedTarget(c.body) // a refused submission names what it asked for
		}
		led.add("secret", "", c.route.Mux(), target, string(c.code))
	}
	unchanged("after the API's refusals")

	// The CLI: what it checks itself never reaches a master (route
	// zero); what the master refuses is audited.
	queue, tenant := api.PutQueue.Endpoint, api.CreateTenant.Endpoint
	for _, c := range []struct {
		name     string
		args     []string
		mentions []string
		route    wire.Endpoint
		target   string
		code     wire.ErrorCode
	}{
		{"weight 0", []string{"queue", "set", "q1", "--weight", "0"}, []string{"--weight"}, wire.Endpoint{}, "", ""},
		{"negative weight", []string{"queue", "set", "q1", "--weight=-1"}, []string{"--weight"}, wire.Endpoint{}, "", ""},
		{"a weight that is no number", []string{"queue", "set", "q1", "--weight", "lots"}, []string{"--weight"}, wire.Endpoint{}, "", ""},
		{"a guarantee of more cores than the workers have", []string{"queue", "set", "q1", "--guarantee", "cores=3"}, []string{"guarantee"}, queue, "q1", wire.CodeBadRequest},
		{"a guarantee of more memory than the workers have", []string{"queue", "set", "q1", "--guarantee", "memory=4g"}, []string{"guarantee"}, queue, "q1", wire.CodeBadRequest},
		{"a guarantee of an unknown resource", []string{"queue", "set", "q1", "--guarantee", "tpu=1"}, []string{"guarantee", "tpu"}, queue, "q1", wire.CodeBadRequest},
		{"a limit of an unknown resource", []string{"queue", "set", "q1", "--limit", "cores=1,tpu=1"}, []string{"limit", "tpu"}, queue, "q1", wire.CodeBadRequest},
		{"a guarantee that does not parse", []string{"queue", "set", "q1", "--guarantee", "cores=many"}, []string{"--guarantee"}, wire.Endpoint{}, "", ""},
		{"a negative limit", []string{"queue", "set", "q1", "--limit", "cores=-2"}, []string{"--limit"}, wire.Endpoint{}, "", ""},
		{"preempt neither true nor false", []string{"queue", "set", "q1", "--preempt", "maybe"}, []string{"--preempt"}, wire.Endpoint{}, "", ""},
		{"a name with bad characters", []string{"queue", "set", "Bad!"}, []string{"Bad!"}, wire.Endpoint{}, "", ""},
		{"deleting the default queue", []string{"queue", "delete", wire.DefaultQueue}, []string{wire.DefaultQueue}, api.DeleteQueue.Endpoint, wire.DefaultQueue, wire.CodeWrongState},
		{"a driver in an unknown queue", []string{"submit", "--queue", "nope", "--", "/bin/true"}, []string{"nope"}, api.SubmitDriver.Endpoint, "", wire.CodeUnknownQueue},
		{"a tenant of an unknown queue", []string{"tenant", "create", "tx", "--queues", "nope"}, []string{"nope"}, tenant, "tx", wire.CodeUnknownQueue},
	} {
		out, err := cl.berthCLI(c.args...)
		if err == nil {
			t.Errorf("berth %s (%s): succeeded:\n%s", strings.Join(c.args, " "), c.name, out)
			continue
		}
		for _, m := range c.mentions {
			if !strings.Contains(out, m) {
				t.Errorf("berth %s (%s): the output does not name %q:\n%s", strings.Join(c.args, " "), c.name, m, out)
			}
		}
		if c.route.Method != "" {
			target := c.target
			if c.route == api.SubmitDriver.Endpoint {
				target = "name:true" // berth submit names a driver after its program
			}
			led.add("secret", "", c.route.Mux(), target, string(c.code))
		}
	}
	unchanged("after the CLI's refusals")
	led.check(t, cl.c, "after the refusals")
}
