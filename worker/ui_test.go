package worker

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The worker's page lists what it runs, with each process's pid, behind
// the sign-in: with a secret, a page without a session goes to the sign-in.
func TestWorkerPageListsItsProcesses(t *testing.T) {
	_, tw := startParallel(t, nil)
	pid := tw.runSleeper("app-ui", 3)
	code, body := tw.call(http.MethodGet, "/ui/", nil)
	if code != http.StatusOK {
		t.Fatalf("the page: %d", code)
	}
	for _, want := range []string{"Worker " + tw.ID(), "app-ui/3", fmt.Sprint(pid), "RUNNING"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, tw.URL()+"/ui/", nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/ui/sign-in") {
		t.Errorf("a page without a session: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
