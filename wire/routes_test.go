package wire

import (
	"os"
	"strings"
	"testing"
)

func TestPathFillsParametersInOrder(t *testing.T) {
	got := MasterAPI.ExecutorLogs.Path("app-1", "7", "stderr")
	if want := "/v1/apps/app-1/executors/7/logs/stderr"; got != want {
		t.Fatalf("Path = %q, want %q", got, want)
	}
	if got := MasterAPI.App.Path("a b/c"); got != "/v1/apps/a%20b%2Fc" {
		t.Fatalf("Path does not escape: %q", got)
	}
	for _, params := range [][]string{{}, {"a", "b"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Path%v on %s did not panic", params, MasterAPI.App.Mux())
				}
			}()
			MasterAPI.App.Path(params...)
		}()
	}
}

// Every route is declared once: no two share a method and pattern.
func TestRoutesAreUnique(t *testing.T) {
	for _, api := range []any{MasterAPI, WorkerAPI} {
		seen := map[string]bool{}
		for _, e := range Endpoints(api) {
			if seen[e.Mux()] {
				t.Errorf("%s declared twice", e.Mux())
			}
			seen[e.Mux()] = true
		}
	}
}

// docs/API.md names every route and every error code: the reference cannot
// fall behind the declarations.
func TestAPIDocCoversEveryRouteAndCode(t *testing.T) {
	data, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, api := range []any{MasterAPI, WorkerAPI} {
		for _, e := range Endpoints(api) {
			if !strings.Contains(doc, "`"+e.Method+" "+e.Pattern+"`") {
				t.Errorf("docs/API.md does not list `%s`", e.Mux())
			}
		}
	}
	for _, c := range ErrorCodes {
		if !strings.Contains(doc, "`"+string(c)+"`") {
			t.Errorf("docs/API.md does not explain the error code `%s`", c)
		}
	}
}
