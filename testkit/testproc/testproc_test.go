package testproc

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
)

// failingTB stands in for a test, to see a helper fail it: it records the
// failures instead of failing the real test, and a Fatal ends only the
// goroutine of the helper.
type failingTB struct {
	testing.TB
	failures []string
}

func (f *failingTB) Helper() {}

func (f *failingTB) Errorf(format string, args ...any) {
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

func (f *failingTB) Fatal(args ...any) {
	f.failures = append(f.failures, fmt.Sprint(args...))
	runtime.Goexit()
}

func (f *failingTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// failures runs helper as a test would and returns how it failed the test.
func failures(t *testing.T, helper func(tb testing.TB)) []string {
	tb := &failingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		helper(tb)
	}()
	<-done
	return tb.failures
}

func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, 10*time.Second, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
	got := failures(t, func(tb testing.TB) {
		Eventually(tb, 20*time.Millisecond, "what never comes", func() bool { return false })
	})
	if len(got) != 1 || !strings.Contains(got[0], "waiting for what never comes") {
		t.Errorf("failures %q, want one naming what it waited for", got)
	}
	calls = 0
	Eventually(t, 10*time.Second, "the third call", func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("error cond called %d times, want 3", calls)
	}
	got = failures(t, func(tb testing.TB) {
		Eventually(tb, 20*time.Millisecond, "never", func() error { return errors.New("still no") })
	})
	if len(got) != 1 || !strings.Contains(got[0], "waiting for never: still no") {
		t.Errorf("failures %q, want one naming what it waited for and the last error", got)
	}
}

func TestStable(t *testing.T) {
	calls := 0
	Stable(t, 120*time.Millisecond, "holds", func() error { calls++; return nil })
	if calls < 2 {
		t.Errorf("Stable called a condition that holds %d times", calls)
	}
	got := failures(t, func(tb testing.TB) {
		Stable(tb, time.Minute, "breaks", func() error { return errors.New("broke") })
	})
	if len(got) != 1 || got[0] != "breaks: broke" {
		t.Errorf("failures %q, want [breaks: broke]", got)
	}
}

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v := Receive(t, ch, 10*time.Second, "a value"); v != 7 {
		t.Errorf("Receive = %d, want 7", v)
	}
	got := failures(t, func(tb testing.TB) { Receive(tb, ch, 20*time.Millisecond, "a second value") })
	if len(got) != 1 || !strings.Contains(got[0], "waiting for a second value") {
		t.Errorf("failures %q, want one naming what it waited for", got)
	}
}

func TestRunBinaryAndCheckBadFlags(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	res := RunBinary(t, sh, []string{"WHO=env"}, "-c", `echo out; echo "err $WHO" >&2; exit 3`)
	if res != (Result{Stdout: "out\n", Stderr: "err env\n", Code: 3}) {
		t.Errorf("RunBinary = %+v", res)
	}
	cases := []BadFlag{
		{Args: []string{"-c", `echo "bad --size" >&2; exit 2`}, Flag: "--size"},
		{Args: []string{"-c", `echo "bad --size" >&2; exit 1`}, Flag: "--size"},                         // wrong status
		{Env: []string{"F=--other"}, Args: []string{"-c", `echo "bad $F" >&2; exit 2`}, Flag: "--size"}, // names another
		{Args: []string{"-c", `echo "bad --size"; exit 2`}, Flag: "--size"},                             // on stdout only
	}
	got := failures(t, func(tb testing.TB) { CheckBadFlags(tb, sh, 2, nil, cases) })
	if len(got) != 3 {
		t.Errorf("CheckBadFlags failed %d runs, want the last 3: %q", len(got), got)
	}
}

func TestExitCodeKillsWhatOutlivesItsTime(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	got := failures(t, func(tb testing.TB) { ExitCode(tb, cmd, 20*time.Millisecond) })
	if len(got) != 1 || !strings.Contains(got[0], "did not exit in time") {
		t.Errorf("failures %q, want one saying it did not exit in time", got)
	}
	if cmd.ProcessState == nil || Alive(cmd.Process.Pid) {
		t.Error("the process outlived its time")
	}
}

func TestAlive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if !Alive(os.Getpid()) {
		t.Error("this test is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	if Alive(cmd.Process.Pid) {
		t.Error("a reaped process is alive")
	}
}

func TestHandleJSON(t *testing.T) {
	type request struct{ N int }
	srv := httptest.NewServer(HandleJSON(func(_ *http.Request, req request) (any, error) {
		if req.N < 0 {
			return nil, httpx.Errorf(http.StatusConflict, "negative")
		}
		return request{N: req.N * 2}, nil
	}))
	defer srv.Close()
	for body, want := range map[string]int{`{"N":2}`: 200, `{"N":-1}`: 409, `{"M":1}`: 400, ``: 400} {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("body %q: status %d, want %d", body, resp.StatusCode, want)
		}
	}
	if _, err := http.Get(ClosedURL(t)); err == nil {
		t.Error("something answered at ClosedURL")
	}
}
