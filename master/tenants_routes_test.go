package master

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// What POST /v1/tenants and PUT /v1/queues took that they must not: root
// as a tenant's Unix user, one Unix user for two tenants (the docs say
// never to), and a queue body of null (it made the queue). Each is a 400
// and changes nothing.
func TestTenantsAndQueuesRefuseWhatTheDocsForbid(t *testing.T) {
	_, base := runMaster(t, Config{WorkerTimeout: time.Minute}, nil, nil)
	api := wire.MasterAPI
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) { // polling with a deadline: the master elects itself
		if status, _ := callJSON(t, base, api.PutQueue.Endpoint, wire.QueueSpec{}, "etl"); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no queue etl made")
		}
	}
	for _, c := range []struct {
		name   string
		e      wire.Endpoint
		param  string
		body   any
		status int
		want   string
	}{
		{"root as a tenant's Unix user", api.CreateTenant.Endpoint, "a", wire.TenantSpec{Queues: []string{"etl"}, UnixUser: "root"}, http.StatusBadRequest, "unixUser root"},
		{"a first tenant of Unix user team", api.CreateTenant.Endpoint, "b", wire.TenantSpec{Queues: []string{"etl"}, UnixUser: "team"}, http.StatusOK, ""},
		{"a second tenant of Unix user team", api.CreateTenant.Endpoint, "c", wire.TenantSpec{Queues: []string{"etl"}, UnixUser: "team"}, http.StatusBadRequest, "unixUser team is tenant b's"},
		{"a queue body of null", api.PutQueue.Endpoint, "made-by-null", nil, http.StatusBadRequest, "null"},
	} {
		var status int
		var body []byte
		if c.body == nil {
			status, body = rawCall(t, base, c.e, "null", c.param)
		} else {
			status, body = callJSON(t, base, c.e, c.body, c.param)
		}
		if status != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, status, body, c.status, c.want)
		}
	}
	_, body := callJSON(t, base, api.Queues.Endpoint, nil)
	if strings.Contains(string(body), "made-by-null") {
		t.Errorf("a null body made its queue: %s", body)
	}
	_, body = callJSON(t, base, api.Tenants.Endpoint, nil)
	if strings.Contains(string(body), `"a"`) || strings.Contains(string(body), `"c"`) {
		t.Errorf("a refused tenant was made: %s", body)
	}
}

// rawCall sends body as it is on e.
func rawCall(t *testing.T, base string, e wire.Endpoint, body string, params ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(e.Method, base+e.Path(params...), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}
