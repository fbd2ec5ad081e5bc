package client

import (
	"context"
	"net/http"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// ClearWorker posts the clear route of the worker and returns its status.
func TestClearWorker(t *testing.T) {
	m := newFakeMaster(t, "s", func(w http.ResponseWriter, r *http.Request) {
		if r.Method+" "+r.URL.Path != "POST "+wire.MasterAPI.ClearWorker.Path("w1") {
			httpx.WriteError(w, http.StatusNotFound, "unknown route %s %s", r.Method, r.URL.Path)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, wire.WorkerStatus{ID: "w1", State: wire.WorkerAlive})
	})
	c := newTestClient(t, []string{m.URL()}, "s")
	st, err := c.ClearWorker(context.Background(), "w1")
	if err != nil || st.ID != "w1" || st.State != wire.WorkerAlive {
		t.Fatalf("ClearWorker = %+v, %v", st, err)
	}
	if _, err := c.ClearWorker(context.Background(), "w9"); err == nil || StatusCode(err) != http.StatusNotFound {
		t.Fatalf("ClearWorker of an unknown worker: %v", err)
	}
}
