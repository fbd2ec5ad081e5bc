package ui

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkPages renders the overview and the topology of 10,000 workers
// and 1,000 apps (2,000 executors), server-side, as a page request does
// (the source's answer is given: reading it from the loop is the API's
// cost, measured with the master). Tables paginate: the page holds 100 of
// each list, the counts cover all.
//
//	go test -run XXX -bench Pages -benchmem ./ui
func BenchmarkPages(b *testing.B) {
	h := Handler(Options{Source: &fakeSource{c: cluster(10000, 1000)}, Log: discard()})
	for _, path := range []string{"/ui/", "/ui/topology", "/ui/apps/app-20261124120000-0500", "/ui/workers/w05000"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d", path, rec.Code)
				}
			}
		})
	}
}
