package master

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// One-time sign-in links for the web UI (berth ui, POST
// /v1/ui/sign-in-links): an operator's CLI, which proves itself with its
// certificate or the secret, asks a master for a link; the browser that
// opens it gets a session of that master's UI, without a certificate in
// its store and without the secret typed in. A code works once, on the
// master that made it (it lives in that master's memory only), within
// signInLinkTTL.

const (
	signInLinkTTL = 5 * time.Minute
	// maxSignInLinks bounds the codes outstanding: the oldest go first.
	maxSignInLinks = 64
)

// signInLinks are the codes outstanding, by their hash. Its zero value is
// ready.
type signInLinks struct {
	mu    sync.Mutex
	codes map[[sha256.Size]byte]time.Time // → expiry
}

// mint makes a code that expires signInLinkTTL after now.
func (l *signInLinks) mint(now time.Time) (string, time.Time) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	code := base64.RawURLEncoding.EncodeToString(b[:])
	expires := now.Add(signInLinkTTL)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.codes == nil {
		l.codes = map[[sha256.Size]byte]time.Time{}
	}
	for h, exp := range l.codes {
		if !now.Before(exp) {
			delete(l.codes, h)
		}
	}
	for len(l.codes) >= maxSignInLinks { // drop the one closest to its end
		var oldest [sha256.Size]byte
		first := true
		for h, exp := range l.codes {
			if first || exp.Before(l.codes[oldest]) {
				oldest, first = h, false
			}
		}
		delete(l.codes, oldest)
	}
	l.codes[sha256.Sum256([]byte(code))] = expires
	return code, expires
}

// redeem spends code: true if it was outstanding and had not expired.
func (l *signInLinks) redeem(code string, now time.Time) bool {
	h := sha256.Sum256([]byte(code))
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.codes[h]
	delete(l.codes, h)
	return ok && now.Before(exp)
}

// serveSignInLink answers an operator with a one-time link to this
// master's UI.
func (m *Master) serveSignInLink(r *http.Request, _ wire.None) (wire.SignInLink, error) {
	ui := m.cfg.Advertise + wire.MasterAPI.UIPages.Pattern
	if m.cfg.Secret == "" && m.cfg.TLS == nil {
		return wire.SignInLink{URL: ui}, nil // the loopback mode: no sign-in
	}
	if _, err := url.Parse(m.cfg.Advertise); err != nil {
		return wire.SignInLink{}, httpx.Coded(http.StatusInternalServerError, wire.CodeInternal, "this master's address %q: %v", m.cfg.Advertise, err)
	}
	code, expires := m.links.mint(time.Now())
	m.log.Info("made a one-time sign-in link for the web UI", "for", httpx.PrincipalOf(r.Context()).Audit(), "expires", expires)
	// A credential to the UI was made: who asked is recorded (by the
	// leader; a link made at a follower is in that master's log only).
	m.auditSuccess(r.Context())
	return wire.SignInLink{
		URL:     m.cfg.Advertise + wire.MasterAPI.UISignIn.Pattern + "?" + url.Values{wire.SignInCodeParam: {code}}.Encode(),
		Expires: &expires,
	}, nil
}

// redeemSignInCode is the UI's: it spends a code of this master.
func (m *Master) redeemSignInCode(code string) bool { return m.links.redeem(code, time.Now()) }
