package ui

import (
	"fmt"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// Healthy processes on the pages (docs/HEALTH.md): an app's checks and
// restart policy as people read them. Ports and health are shown as the
// status carries them; exclusions and unhealthy workers in pages.go.

// checkText says what a check does and when: "web: GET :http/health every
// 5s, timeout 2s, 3 failures in a row, start period 30s".
func checkText(c wire.Check) string {
	var what string
	switch c.Type {
	case wire.CheckHTTP:
		path := c.Path
		if path == "" {
			path = "/"
		}
		what = "GET :" + c.Port + path
	case wire.CheckTCP:
		what = "tcp :" + c.Port
	case wire.CheckExec:
		what = "exec " + shorten(strings.Join(c.Command, " "), 60)
	default:
		what = string(c.Type)
	}
	s := fmt.Sprintf("%s: %s every %s, timeout %s, %d failures in a row", c.Name, what, c.IntervalD(), c.TimeoutD(), c.FailuresN())
	if p := c.StartPeriodD(); p > 0 {
		s += fmt.Sprintf(", start period %s", p)
	}
	return s
}

// restartText says what a restart policy allows: "3 attempts within
// 10m0s, then fail".
func restartText(p wire.RestartPolicy) string {
	attempts := "--max-executor-retries attempts"
	if p.Attempts != nil {
		attempts = fmt.Sprintf("%d attempts", *p.Attempts)
	}
	s := fmt.Sprintf("%s within %s, then %s", attempts, p.IntervalD(), p.ModeOr())
	if d := p.DelayD(); d > 0 {
		s += fmt.Sprintf(", %s between", d)
	}
	return s
}
