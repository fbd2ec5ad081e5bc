package master

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The open route that ends a UI session takes only a live session of the
// masters as its proof: anything else is a 401 and writes nothing; a live
// one is written, and from then on refused.
func TestEndSessionTakesOnlyALiveSession(t *testing.T) {
	engine := persistence.NewMemory()
	m, base := runMaster(t, Config{WorkerTimeout: time.Minute, Secret: "s3cret"}, engine, nil)
	end := func(value string) int {
		t.Helper()
		body, _ := json.Marshal(wire.EndSession{Session: value})
		resp, err := http.Post(base+wire.MasterAPI.EndUISession.Path(), "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	other, _ := httpx.NewUISessions(sessionCookie, "another secret", "masters", nil).Start()
	worker, _ := httpx.NewUISessions(sessionCookie, "s3cret", "worker w1 x", nil).Start()
	for name, bad := range map[string]string{"junk": "junk", "another secret's": other, "a worker's": worker, "empty": ""} {
		if code := end(bad); code != http.StatusUnauthorized {
			t.Errorf("%s session: %d, want 401", name, code)
		}
	}
	ended := func() int {
		n := 0
		engine.Read(t.Context(), func(s *persistence.State) { n = len(s.EndedSessions) })
		return n
	}
	if n := ended(); n != 0 {
		t.Fatalf("refused ends wrote %d sessions", n)
	}
	good, _ := m.sessions.Start()
	if err := m.sessions.Check(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 10*time.Second, "the end written", func() bool { return end(good) == http.StatusOK })
	if n := ended(); n != 1 || m.sessions.Check(t.Context(), good) == nil {
		t.Errorf("after its end: %d sessions ended, the session still taken: %v", n, m.sessions.Check(t.Context(), good) == nil)
	}
}
