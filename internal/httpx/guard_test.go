package httpx

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The shapes of cross-site request forgery and DNS rebinding a browser can
// be made to send, refused before any handler runs; what berth's own
// clients send passes.
func TestGuardRefusesBrowserShapedRequests(t *testing.T) {
	ran := 0
	h := Guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }), true)
	for _, c := range []struct {
		name, method, host, ctype, origin, body string
		status                                  int
	}{
		{"json from a client", "POST", "127.0.0.1:7077", "application/json", "", "{}", 200},
		{"json with a charset", "POST", "localhost:7077", "application/json; charset=utf-8", "", "{}", 200},
		{"a read", "GET", "127.0.0.1:7077", "", "", "", 200},
		{"same origin", "DELETE", "127.0.0.1:7077", "", "http://127.0.0.1:7077", "", 200},
		{"text/plain form post", "POST", "127.0.0.1:7077", "text/plain", "", `{"command":["id"]}`, 403},
		{"urlencoded form post", "POST", "127.0.0.1:7077", "application/x-www-form-urlencoded", "", "a=b", 403},
		{"no content type", "POST", "127.0.0.1:7077", "", "", "{}", 403},
		{"cross-site origin", "POST", "127.0.0.1:7077", "application/json", "https://evil.example", "{}", 403},
		{"cross-site read", "GET", "127.0.0.1:7077", "", "https://evil.example", "", 403},
		{"rebinding host", "POST", "evil.example:7077", "application/json", "", "{}", 403},
		{"rebinding read", "GET", "evil.example", "", "", "", 403},
	} {
		r := httptest.NewRequest(c.method, "/v1/drivers", strings.NewReader(c.body))
		r.Host = c.host
		if c.ctype != "" {
			r.Header.Set("Content-Type", c.ctype)
		}
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		before := ran
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status || (c.status == 403) != (ran == before) || (c.status == 403 && !strings.Contains(w.Body.String(), `"forbidden"`)) {
			t.Errorf("%s: %d %s (handler ran: %v)", c.name, w.Code, w.Body.String(), ran != before)
		}
	}
	// With credentials the Host is the operator's business (a load
	// balancer's name); the other checks stay.
	h = Guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), false)
	r := httptest.NewRequest("GET", "/v1/cluster", nil)
	r.Host = "berth.example:7077"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("named host with credentials: %d", w.Code)
	}
}
