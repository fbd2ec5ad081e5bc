package load

import (
	"testing"
	"time"
)

func TestHBStatsWindow(t *testing.T) {
	var s hbStats
	s.record(true, time.Millisecond, time.Millisecond, 5*time.Second, "w0") // before the window: ignored
	s.setOn(true)
	s.record(true, 2*time.Millisecond, 3*time.Millisecond, time.Second, "w1")
	s.record(false, 0, 0, 0, "w2")
	s.record(true, 4*time.Millisecond, 5*time.Millisecond, 2*time.Second, "w3")
	s.setOn(false)
	s.record(false, 0, 0, 0, "w4")
	s.noteGap(1500*time.Millisecond, "w5")
	if s.ok != 2 || s.errs != 1 || len(s.rtt) != 2 || s.maxGap != 2*time.Second || s.gapOf != "w3" {
		t.Errorf("stats: ok %d errs %d rtt %v gap %v of %s", s.ok, s.errs, s.rtt, s.maxGap, s.gapOf)
	}
}
