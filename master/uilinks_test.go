package master

import (
	"errors"
	"testing"
	"time"
)

// A sign-in code works once, before it expires; the codes outstanding are
// bounded.
func TestSignInLinksWorkOnce(t *testing.T) {
	var l signInLinks
	now := time.Now()
	code, expires := l.mint(now)
	if !expires.Equal(now.Add(signInLinkTTL)) || len(code) < 40 {
		t.Fatalf("code %q expires %v", code, expires)
	}
	if l.redeem("nope", now) {
		t.Error("an unknown code redeemed")
	}
	if !l.redeem(code, now.Add(time.Minute)) || l.redeem(code, now.Add(time.Minute)) {
		t.Error("a code not good exactly once")
	}
	late, _ := l.mint(now)
	if l.redeem(late, now.Add(signInLinkTTL)) {
		t.Error("an expired code redeemed")
	}
	first, _ := l.mint(now)
	for range maxSignInLinks {
		l.mint(now.Add(time.Second))
	}
	if len(l.codes) > maxSignInLinks || l.redeem(first, now) {
		t.Errorf("%d codes kept; the oldest still good", len(l.codes))
	}
}

// A master that stops answering is unreachable since its first failed
// ask, and reachable again at its next answer.
func TestPeerWatchKeepsSinceWhen(t *testing.T) {
	var w peerWatch
	t0 := time.Now()
	w.record("m2", nil, t0)
	w.record("m2", errors.New("connection refused"), t0.Add(time.Second))
	w.record("m2", errors.New("connection refused"), t0.Add(2*time.Second))
	s, ok := w.get("m2")
	if !ok || !s.downSince.Equal(t0.Add(time.Second)) || !s.lastSeen.Equal(t0) || s.err != "connection refused" {
		t.Fatalf("after two failed asks: %+v", s)
	}
	w.record("m2", nil, t0.Add(3*time.Second))
	if s, _ = w.get("m2"); !s.downSince.IsZero() || !s.lastSeen.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("after it answered again: %+v", s)
	}
}
