package wire

import (
	"strings"
	"testing"
	"time"
)

func dur(d time.Duration) *Duration { v := Duration(d); return &v }
func num(n int) *int                { return &n }

// Every bad check, port label and restart policy is refused, naming what
// is wrong; the good ones pass.
func TestHealthSpecRefusesWhatCannotWork(t *testing.T) {
	ports := []string{"http", "admin_2"}
	good := []Check{
		{Name: "web", Type: CheckHTTP, Port: "http", Path: "/health"},
		{Name: "up", Type: CheckTCP, Port: "admin_2", Interval: dur(time.Second), Timeout: dur(500 * time.Millisecond), Failures: num(1)},
		{Name: "ready-1", Type: CheckExec, Command: []string{"true"}, StartPeriod: dur(30 * time.Second)},
	}
	if err := CheckHealthSpec(ports, good, &RestartPolicy{Attempts: num(3), Interval: dur(10 * time.Minute), Mode: RestartDelay}); err != nil {
		t.Fatalf("good spec refused: %v", err)
	}
	for _, c := range []struct {
		name   string
		ports  []string
		checks []Check
		policy *RestartPolicy
		want   string
	}{
		{"bad label", []string{"HTTP"}, nil, nil, `label "HTTP"`},
		{"label twice", []string{"a", "a"}, nil, nil, `"a" twice`},
		{"too many", make([]string, MaxPorts+1), nil, nil, "at most 16"},
		{"unknown port", ports, []Check{{Name: "c", Type: CheckHTTP, Port: "grpc"}}, nil, `port "grpc" is not one of`},
		{"zero interval", ports, []Check{{Name: "c", Type: CheckTCP, Port: "http", Interval: dur(0)}}, nil, "interval 0s"},
		{"negative interval", ports, []Check{{Name: "c", Type: CheckTCP, Port: "http", Interval: dur(-time.Second)}}, nil, "interval -1s"},
		{"timeout above interval", ports, []Check{{Name: "c", Type: CheckTCP, Port: "http", Interval: dur(time.Second), Timeout: dur(2 * time.Second)}}, nil, "timeout 2s"},
		{"zero failures", ports, []Check{{Name: "c", Type: CheckTCP, Port: "http", Failures: num(0)}}, nil, "failures 0"},
		{"exec without command", ports, []Check{{Name: "c", Type: CheckExec}}, nil, "needs a command"},
		{"unknown type", ports, []Check{{Name: "c", Type: "grpc"}}, nil, `type "grpc"`},
		{"name twice", ports, []Check{{Name: "c", Type: CheckTCP, Port: "http"}, {Name: "c", Type: CheckTCP, Port: "http"}}, nil, "the name twice"},
		{"relative path", ports, []Check{{Name: "c", Type: CheckHTTP, Port: "http", Path: "health"}}, nil, "absolute path"},
		{"bad mode", nil, nil, &RestartPolicy{Mode: "retry"}, `mode "retry"`},
		{"negative attempts", nil, nil, &RestartPolicy{Attempts: num(-1)}, "attempts -1"},
		{"short interval", nil, nil, &RestartPolicy{Interval: dur(time.Millisecond)}, "interval 1ms"},
	} {
		err := CheckHealthSpec(c.ports, c.checks, c.policy)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// A restart policy's verdict: failures beyond the attempts within the
// interval fail (mode fail) or wait until the oldest leaves it (mode
// delay); older failures are forgotten; the delay is the least wait.
func TestRestartVerdict(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	p := RestartPolicy{Interval: dur(10 * time.Minute), Delay: dur(5 * time.Second)}

	kept, fail, wait := p.Verdict(2, []time.Time{at(0)}, at(1))
	if len(kept) != 2 || fail || !wait.Equal(at(1).Add(5*time.Second)) {
		t.Errorf("second failure of 2 attempts: kept %d, fail %v, wait %v", len(kept), fail, wait)
	}
	if _, fail, _ := p.Verdict(2, []time.Time{at(0), at(1)}, at(2)); !fail {
		t.Error("a third failure within the interval, 2 attempts, mode fail: not failed")
	}
	kept, fail, _ = p.Verdict(2, []time.Time{at(0), at(1)}, at(10).Add(30*time.Second))
	if fail || len(kept) != 2 {
		t.Errorf("a failure after the first left the interval: kept %v, fail %v", kept, fail)
	}
	p.Mode = RestartDelay
	_, fail, wait = p.Verdict(2, []time.Time{at(0), at(1)}, at(2))
	if fail || !wait.Equal(at(10)) {
		t.Errorf("mode delay: fail %v, wait until %v, want until %v (the oldest leaves the interval)", fail, wait, at(10))
	}
	if _, fail, _ := (RestartPolicy{}).Verdict(0, nil, at(0)); !fail {
		t.Error("0 attempts: the first failure is the end")
	}
}
