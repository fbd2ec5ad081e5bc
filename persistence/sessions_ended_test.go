package persistence

import (
	"fmt"
	"testing"
)

// A holder's ended sessions are bounded: the sign-out beyond
// MaxEndedSessionsPerHolder ends, in one entry, every session of that
// holder up to the latest it signed out, so none signed out is valid
// again, and another holder's (the operators') are untouched. Before, a
// tenant signing in and out in a loop grew every master's state by an
// entry a sign-out for 12 hours.
func TestEndedSessionsOfAHolderAreBounded(t *testing.T) {
	s := NewState()
	end := func(holder, id string, expires, at int64) {
		t.Helper()
		if err := s.Apply(EndSession(EndedSession{ID: id, Expires: expires, At: at, Holder: holder}), nil); err != nil {
			t.Fatal(err)
		}
	}
	end("", "op", 50_000, 1)
	for i := range MaxEndedSessionsPerHolder {
		end("acme", fmt.Sprintf("s%d", i), int64(10_000+i), 2)
	}
	if !s.SessionEnded("acme", "s5", 10_005) || s.SessionEnded("acme", "fresh", 10_005) || s.SessionEnded("", "s5", 10_005) {
		t.Fatal("below the bound: only the sessions signed out are ended, each of its own holder")
	}
	// One more: a session that expires before some already signed out.
	end("acme", "late", 10_500, 3)
	if n := len(s.EndedSessions); n > 2 {
		t.Errorf("%d entries after the bound was passed, want acme's one and the operator's", n)
	}
	for _, id := range []string{"s0", "s999", "late", "unsigned-but-older"} {
		if !s.SessionEnded("acme", id, 10_000) || (id == "s999" && !s.SessionEnded("acme", id, 10_999)) {
			t.Errorf("acme's session %s is valid again", id)
		}
	}
	if s.SessionEnded("acme", "newer", 20_000) {
		t.Error("a session acme signed in after the latest it signed out is ended too")
	}
	if !s.SessionEnded("", "op", 50_000) || s.SessionEnded("", "other", 40_000) {
		t.Error("the operators' sessions changed with acme's bound")
	}
	if s.SessionEnded("globex", "s0", 10_000) {
		t.Error("another tenant's session ended with acme's")
	}
	// Past the latest expiry the entry goes, as every ended session does.
	end("acme", "next", 30_000, 11_000)
	if _, ok := s.EndedSessions[EndedKey("acme", endedAll)]; ok {
		t.Errorf("acme's bound entry kept past its expiry: %v", s.EndedSessions)
	}
	// A tenant's sign-out of before holders were kept is still ended.
	s.EndedSessions["legacy"] = 40_000
	if !s.SessionEnded("acme", "legacy", 40_000) {
		t.Error("a tenant's session signed out before the upgrade is valid again")
	}
	if c := s.Clone(); !c.Equal(s) {
		t.Error("a clone differs")
	}
}
