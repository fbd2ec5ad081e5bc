package ui

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A tenant's 403 for another tenant's app repeated the query's id whole
// (about 1 MB), and a posted action of an unknown kind its whole kind
// (64 KiB): each now repeats at most what the API repeats of a value.
func TestTheUIRepeatsABoundedPartOfWhatItRefuses(t *testing.T) {
	huge := strings.Repeat("a", 1<<20)
	if msg := notTheTenants("c", 0, huge); len(msg) > 1024 {
		t.Errorf("the refusal of an id of 1 MB is %d bytes", len(msg))
	}
	form := url.Values{"kind": {strings.Repeat("k", 64<<10)}, "id": {"app-1"}}
	r := httptest.NewRequest("POST", "/ui/actions", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if _, _, msg := actionOf(r); msg == "" || len(msg) > 1024 {
		t.Errorf("the refusal of an action of a 64 KiB kind: %d bytes (%.60q)", len(msg), msg)
	}
}
