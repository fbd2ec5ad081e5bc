package httpx

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A session is live from its sign-in until it expires or is signed out;
// a changed secret, another scope or a forged value is no session.
func TestUISessionsExpireEndAndBelongToTheirScope(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ended := NewEndedSet(clock)
	s := NewUISessions("c", "s3cret", "masters", clock)
	s.Ended, s.End = ended.Ended, ended.End
	ctx := context.Background()

	a, expires := s.Start()
	b, _ := s.Start()
	if a == b {
		t.Fatal("two sign-ins got the same session")
	}
	if !expires.Equal(now.Add(UISessionTTL)) {
		t.Errorf("expires %v, want %v", expires, now.Add(UISessionTTL))
	}
	if err := s.Check(ctx, a); err != nil {
		t.Fatalf("a fresh session: %v", err)
	}
	for name, other := range map[string]*UISessions{
		"another secret": NewUISessions("c", "changed", "masters", clock),
		"another scope":  NewUISessions("c", "s3cret", "worker w1 x", clock),
	} {
		if err := other.Check(ctx, a); err == nil {
			t.Errorf("%s took the session", name)
		}
	}
	id, _, _ := s.Parse(a)
	for _, forged := range []string{"", "s3cret", a + "x", strings.Replace(a, "s1.", "s2.", 1), a[:len(a)-4] + "AAAA",
		// the payload of a with another expiry, its signature kept
		"s1." + strings.Repeat("A", 32) + "." + strings.SplitN(a, ".", 3)[2]} {
		if err := s.Check(ctx, forged); err == nil {
			t.Errorf("a forged value %q was taken", forged)
		}
	}
	if err := s.SignOut(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx, a); err == nil {
		t.Error("a signed-out session is still taken")
	}
	if err := s.Check(ctx, b); err != nil {
		t.Errorf("another session ended with the first: %v", err)
	}
	if ok, _ := ended.Ended(ctx, SessionRef{ID: id}); !ok {
		t.Error("the ended set does not hold the id")
	}
	now = now.Add(UISessionTTL)
	if err := s.Check(ctx, b); err == nil {
		t.Error("an expired session is still taken")
	}
	c, _ := s.Start()
	if err := s.SignOut(ctx, c); err != nil {
		t.Fatal(err)
	}
	if ok, _ := ended.Ended(ctx, SessionRef{ID: id}); ok {
		t.Error("an expired id is still kept by the ended set")
	}
}
