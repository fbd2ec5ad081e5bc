package httpx

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

func TestRequireSecret(t *testing.T) {
	calls := 0
	h := RequireSecret("s3cret", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++ }))
	cases := []struct {
		path, auth string
		want       int
	}{
		{"/healthz", "", 200},
		{"/v1/cluster", "", 401},
		{"/v1/cluster", "Bearer wrong", 401},
		{"/v1/cluster", "Bearer s3cret0", 401},
		{"/v1/cluster", "s3cret", 401},
		{"/v1/cluster", "Bearer s3cret", 200},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s with %q: status %d, want %d", c.path, c.auth, rec.Code, c.want)
		}
	}
	if calls != 2 {
		t.Errorf("handler ran %d times, want 2 (only authorized requests)", calls)
	}
}

func TestDecodeJSON(t *testing.T) {
	type body struct {
		A int `json:"a"`
	}
	cases := []struct {
		in   string
		want int // 0: ok
	}{
		{`{"a":1}`, 0},
		{``, 400},
		{`{"a":`, 400},
		{`{"a":1,"b":2}`, 400},
		{`{"a":1}{"a":2}`, 400},
		{`{"a":"x"}`, 400},
		{`{"a":1}` + strings.Repeat(" ", wire.MaxBodyBytes), 413},
	}
	for _, c := range cases {
		var v body
		req := httptest.NewRequest("POST", "/", strings.NewReader(c.in))
		err := DecodeJSON(httptest.NewRecorder(), req, &v)
		if c.want == 0 {
			if err != nil || v.A != 1 {
				t.Errorf("%.20q: %v, %+v", c.in, err, v)
			}
			continue
		}
		var se *StatusError
		if !errors.As(err, &se) || se.Status != c.want {
			t.Errorf("%.20q: error %v, want status %d", c.in, err, c.want)
		}
	}
}

func TestClientErrorsAndNoRedirect(t *testing.T) {
	srv := httptest.NewServer(RequireSecret("k", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			WriteJSON(w, 200, wire.Submitted{ID: "x"})
		case "/redirect":
			WriteErr(w, r, &StatusError{Status: 307, Message: "not the leader", Leader: "http://127.0.0.2:7077"})
		default:
			WriteError(w, 404, "no such thing")
		}
	})))
	defer srv.Close()
	ctx := context.Background()

	var out wire.Submitted
	if err := NewClient("k", 0).Do(ctx, "GET", srv.URL+"/ok", nil, &out); err != nil || out.ID != "x" {
		t.Fatalf("ok: %v %+v", err, out)
	}
	var se *StatusError
	err := NewClient("bad", 0).Do(ctx, "GET", srv.URL+"/ok", nil, nil)
	if !errors.As(err, &se) || se.Status != 401 {
		t.Fatalf("wrong secret: %v", err)
	}
	err = NewClient("k", 0).Do(ctx, "POST", srv.URL+"/redirect", wire.ExecutorLimit{Limit: 1}, nil)
	if !errors.As(err, &se) || se.Status != 307 || se.Leader != "http://127.0.0.2:7077" {
		t.Fatalf("redirect: %v", err)
	}
	err = NewClient("k", 0).Do(ctx, "GET", srv.URL+"/nothing", nil, nil)
	if !errors.As(err, &se) || se.Status != 404 || se.Message != "no such thing" {
		t.Fatalf("404: %v", err)
	}
}

func TestCheckBind(t *testing.T) {
	if err := CheckBind("127.0.0.1", false, "--host"); err != nil {
		t.Error(err)
	}
	if err := CheckBind("::1", false, "--host"); err != nil {
		t.Error(err)
	}
	if err := CheckBind("0.0.0.0", false, "--host"); err == nil || !strings.Contains(err.Error(), "--host") {
		t.Errorf("0.0.0.0 without a secret: %v", err)
	}
	if err := CheckBind("0.0.0.0", true, "--host"); err != nil {
		t.Error(err)
	}
}
