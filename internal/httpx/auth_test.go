package httpx

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// authServer serves a few master routes behind Authorize; each answers 200
// with the caller's kind and name.
func authServer(t *testing.T, a Auth) *httptest.Server {
	mux := http.NewServeMux()
	echo := func(w http.ResponseWriter, r *http.Request) {
		p := PrincipalOf(r.Context())
		w.Header().Set("X-Principal", p.Kind.String()+":"+p.Name)
	}
	api := wire.MasterAPI
	for _, e := range []wire.Endpoint{api.Health.Endpoint, api.Cluster.Endpoint, api.RegisterApp.Endpoint, api.KillApp.Endpoint, api.WorkerHeartbeat.Endpoint, api.JoinMaster.Endpoint} {
		mux.HandleFunc(e.Mux(), echo)
	}
	srv := httptest.NewServer(Authorize(api, mux, a))
	t.Cleanup(srv.Close)
	return srv
}

func ask(t *testing.T, srv *httptest.Server, method, path, bearer string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Principal")
}

func TestAuthorizeAdmitsByDeclaredAccess(t *testing.T) {
	owner := map[string]string{"app-1": "driver-a", "app-3": "team"}
	srv := authServer(t, Auth{
		Secret: "s3cret",
		Bearer: func(_ context.Context, token string) (Principal, error) {
			switch token {
			case wire.DriverTokenPrefix + "driver-a.good":
				return Principal{Kind: KindDriver, Name: "driver-a"}, nil
			case wire.TenantTokenPrefix + "team.good":
				return Principal{Kind: KindTenant, Name: "team", Tenant: "team"}, nil
			}
			return Principal{}, Coded(http.StatusUnauthorized, wire.CodeUnauthorized, "no")
		},
		Scope: func(r *http.Request, pattern string, p Principal) error {
			if id := PathParam(pattern, r, "id"); id != "" && (p.Kind == KindDriver || p.Kind == KindTenant) && owner[id] != p.Name {
				return Coded(http.StatusForbidden, wire.CodeForbidden, "not yours")
			}
			return nil
		},
	})
	driver := wire.DriverTokenPrefix + "driver-a.good"
	tenant := wire.TenantTokenPrefix + "team.good"
	for _, c := range []struct {
		method, path, bearer string
		status               int
		who                  string
	}{
		{"GET", "/healthz", "", 200, "anonymous:"},
		{"GET", "/v1/cluster", "", 401, ""},
		{"GET", "/v1/cluster", "wrong", 401, ""},
		{"GET", "/v1/cluster", "s3cret", 200, "operator:"},
		{"POST", "/v1/workers/w1/heartbeat", "s3cret", 200, "operator:"},
		{"POST", "/v1/raft/join", "s3cret", 200, "operator:"},
		// A driver: its own apps and new ones, nothing else.
		{"POST", "/v1/apps", driver, 200, "driver:driver-a"},
		{"DELETE", "/v1/apps/app-1", driver, 200, "driver:driver-a"},
		{"DELETE", "/v1/apps/app-2", driver, 403, ""},
		{"GET", "/v1/cluster", driver, 403, ""},
		{"POST", "/v1/workers/w1/heartbeat", driver, 403, ""},
		{"POST", "/v1/raft/join", driver, 403, ""},
		{"POST", "/v1/apps", wire.DriverTokenPrefix + "driver-a.forged", 401, ""},
		// A tenant: its own apps, new ones, what it may see of the
		// cluster; no worker or Raft route.
		{"POST", "/v1/apps", tenant, 200, "tenant:team"},
		{"DELETE", "/v1/apps/app-3", tenant, 200, "tenant:team"},
		{"DELETE", "/v1/apps/app-1", tenant, 403, ""},
		{"GET", "/v1/cluster", tenant, 200, "tenant:team"},
		{"POST", "/v1/workers/w1/heartbeat", tenant, 403, ""},
		{"POST", "/v1/raft/join", tenant, 403, ""},
		{"GET", "/v1/cluster", wire.TenantTokenPrefix + "team.forged", 401, ""},
		// Not a declared route: the mux answers.
		{"GET", "/nowhere", "", 404, ""},
	} {
		status, who := ask(t, srv, c.method, c.path, c.bearer)
		if status != c.status || (c.who != "" && who != c.who) {
			t.Errorf("%s %s with %q: %d %q, want %d %q", c.method, c.path, c.bearer, status, who, c.status, c.who)
		}
	}
}

func TestAuthorizeLoopbackModeTakesEveryoneForAnOperator(t *testing.T) {
	srv := authServer(t, Auth{})
	if status, who := ask(t, srv, "GET", "/v1/cluster", ""); status != 200 || who != "operator:" {
		t.Errorf("loopback mode: %d %q", status, who)
	}
	// With TLS configured, a caller without a certificate or bearer is
	// nobody.
	srv = authServer(t, Auth{TLS: true})
	if status, _ := ask(t, srv, "GET", "/v1/cluster", ""); status != 401 {
		t.Errorf("TLS mode without a certificate: %d", status)
	}
}

func TestPathParam(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/apps/app%2F1/executors/3/logs/stdout", nil)
	if got := PathParam("GET /v1/apps/{id}/executors/{executorId}/logs/{stream}", r, "id"); got != "app/1" {
		t.Errorf("id %q", got)
	}
	if got := PathParam("GET /v1/apps/{id}", r, "id"); got != "" {
		t.Errorf("another shape: %q", got)
	}
}

// A follower that cannot check a driver's credential sends the driver to
// the leader: at the same path and query there, so that it can follow.
func TestAuthorizeRedirectKeepsThePath(t *testing.T) {
	srv := authServer(t, Auth{Secret: "s", Bearer: func(context.Context, string) (Principal, error) {
		return Principal{}, &StatusError{Status: http.StatusTemporaryRedirect, Code: wire.CodeNotLeader, Message: "not the leader", Leader: "https://10.0.0.2:7077/"}
	}})
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/apps/app-1?x=1", nil)
	req.Header.Set("Authorization", "Bearer "+wire.DriverTokenPrefix+"d.x")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "https://10.0.0.2:7077/v1/apps/app-1?x=1" {
		t.Errorf("%d to %q, want 307 to the leader's /v1/apps/app-1?x=1", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// A follower's 307 repeats the request URI only up to MaxEchoedURI: a
// 1 MB path sent to a follower came back as a 1 MB Location.
func TestRedirectDoesNotEchoAHugeURI(t *testing.T) {
	srv := authServer(t, Auth{Secret: "s", Bearer: func(context.Context, string) (Principal, error) {
		return Principal{}, &StatusError{Status: http.StatusTemporaryRedirect, Code: wire.CodeNotLeader, Message: "not the leader", Leader: "https://10.0.0.2:7077/"}
	}})
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/apps/"+strings.Repeat("a", MaxEchoedURI), nil)
	req.Header.Set("Authorization", "Bearer "+wire.DriverTokenPrefix+"d.x")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "https://10.0.0.2:7077" || len(body) > 8<<10 {
		t.Errorf("%d to %q with %d bytes of body, want 307 to the leader alone, a short body", resp.StatusCode, resp.Header.Get("Location"), len(body))
	}
}
