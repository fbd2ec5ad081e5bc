package e2e

// Raw HTTP calls: for what the typed client would not send (bad input, a
// stale epoch, no secret) or would not show (a redirect, /readyz).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// httpClient shows redirects rather than following them.
var httpClient = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// answer is a raw HTTP answer.
type answer struct {
	status int
	header http.Header
	body   string
}

// call sends a raw request with the secret key ("" sends none) and body
// (nil sends none; any other as JSON), and returns the answer.
func call(method, url, key string, body []byte) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(string(body)))
	if err != nil {
		return answer{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return answer{status: resp.StatusCode, header: resp.Header, body: string(data)}, nil
}

// jsonOf marshals v or fails the test.
func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// workerState is a worker's GET /v1/state: what it runs, the newest epoch
// it has seen and the master it is registered with.
func workerState(workerURL string) (wire.WorkerLatestState, error) {
	var st wire.WorkerLatestState
	r, err := call(http.MethodGet, workerURL+"/v1/state", secret, nil)
	if err != nil {
		return st, err
	}
	if r.status != http.StatusOK {
		return st, fmt.Errorf("GET %s/v1/state: %d %s", workerURL, r.status, r.body)
	}
	return st, json.Unmarshal([]byte(r.body), &st)
}

// readyz is the status of GET /readyz (with the secret) and its body.
func readyz(masterURL string) (int, string) {
	r, err := call(http.MethodGet, masterURL+"/readyz", secret, nil)
	if err != nil {
		return 0, err.Error()
	}
	return r.status, strings.TrimSpace(r.body)
}

// sendWhileStopped sends a request to a stopped process (whose kernel
// still accepts the connection and buffers the request), returns once the
// request is written, and later reports the answer on the channel.
func sendWhileStopped(t *testing.T, method, url string) <-chan string {
	t.Helper()
	written := make(chan struct{})
	answers := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(written) },
	}), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	go func() {
		defer cancel()
		resp, err := (&http.Client{CheckRedirect: httpClient.CheckRedirect, Transport: httpClient.Transport}).Do(req)
		if err != nil {
			answers <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		answers <- fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}()
	select {
	case <-written:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s %s: request not written within 5s", method, url)
	}
	return answers
}

// auditCount counts the entries of GET /v1/audit at base with principal,
// route and outcome ("" is "ok"), once they stop changing for a moment: a
// success without a write is recorded after its answer.
func auditCount(t *testing.T, base, principal, route, outcome string) int {
	t.Helper()
	if outcome == "" {
		outcome = "ok"
	}
	count := func() int {
		r, err := call(http.MethodGet, base+wire.MasterAPI.AuditLog.Path(), secret, nil)
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("GET /v1/audit: %v %d %.200s", err, r.status, r.body)
		}
		var log wire.Audit
		if err := json.Unmarshal([]byte(r.body), &log); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range log.Entries {
			if e.Principal == principal && e.Route == route && e.Outcome == outcome {
				n++
			}
		}
		return n
	}
	n := count()
	for deadline := time.Now().Add(5 * time.Second); n == 0 && time.Now().Before(deadline); n = count() {
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}
	return n
}
