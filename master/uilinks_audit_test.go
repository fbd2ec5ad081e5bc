package master

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// A one-time sign-in link is an operator's credential to the web UI: its
// making left a line in the master's log and no audit entry.
func TestASignInLinkIsAudited(t *testing.T) {
	const secret = "s3cret-for-the-test"
	_, base := runMaster(t, Config{WorkerTimeout: time.Minute, Secret: secret}, nil, nil)
	api := wire.MasterAPI
	call := func(e wire.Endpoint) (int, []byte) {
		req, _ := http.NewRequest(e.Method, base+e.Path(), nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out json.RawMessage
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	// A link made before the master leads is in its log only: ask again
	// until one is made by the leader, polling with a deadline.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if status, body := call(api.SignInLink.Endpoint); status != http.StatusOK {
			t.Fatalf("a sign-in link: %d %s", status, body)
		}
		_, body := call(api.AuditLog.Endpoint)
		var log wire.Audit
		json.Unmarshal(body, &log)
		for _, e := range log.Entries {
			if e.Route == api.SignInLink.Mux() && e.Outcome == "ok" && e.Principal != "" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no entry of %s in the audit log: %s", api.SignInLink.Mux(), body)
		}
	}
}
