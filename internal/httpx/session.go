package httpx

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The web UI's sessions. A session's cookie holds neither the secret nor
// a fixed value derived from it, but a value signed with a key derived
// from the secret and the scope of servers that accept it: an id of its
// own and its expiry. So a session
//   - expires (UISessionTTL after its sign-in);
//   - ends at its sign-out everywhere it is valid: the servers of its scope
//     keep the ids signed out, until they expire (the masters in their Raft
//     log, a worker in its memory);
//   - ends with the secret: a changed secret is a changed key;
//   - is valid only in its scope: the masters of a cluster share one (a
//     session survives a failover), each run of each worker has its own;
//   - is an operator's, or a tenant's (tenantsession.go): a tenant's names
//     its tenant and is bound to the tenant's token, which every request
//     checks against what the servers keep now.
//
// The cookie is HttpOnly, SameSite=Strict and for the UI's path: no script
// reads it, no other site's request carries it, and the JSON API never
// accepts it.

// UISessionTTL is how long a session lasts after its sign-in.
const UISessionTTL = 12 * time.Hour

const (
	sessionPrefix = "s1."
	sessionIDLen  = 16
)

// SessionRef is what Ended is told of a session: its id, its tenant (""
// for an operator's) and when it expires.
type SessionRef struct {
	ID, Tenant string
	Expires    time.Time
}

// UISessions issues and checks the sessions of one scope.
type UISessions struct {
	// Cookie is the name of the session's cookie.
	Cookie string
	key    []byte
	now    func() time.Time
	// Ended reports whether the session was signed out.
	Ended func(ctx context.Context, s SessionRef) (bool, error)
	// End signs the session value (checked: id, expiring at expires) out,
	// everywhere it is valid.
	End func(ctx context.Context, value, id string, expires time.Time) error
	// TenantToken, when set, lets tenants hold sessions (StartTenant,
	// tenantsession.go): it is the hash of tenant name's token as the
	// servers keep it now, "" if there is no such tenant. Nil (a
	// worker's, which has no tenants): no tenant's session is taken.
	TenantToken func(ctx context.Context, name string) (string, error)
}

// NewUISessions makes the sessions of scope, keyed by secret; its Ended and
// End are left to the caller. now is the clock (nil: time.Now).
func NewUISessions(cookie, secret, scope string, now func() time.Time) *UISessions {
	if secret == "" {
		// No secret (TLS alone): a key of this process's own, never one
		// everybody can compute, which would let anyone forge a session.
		// Its sessions are then this server's alone, for as long as it
		// runs.
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			panic(err) // crypto/rand does not fail on Linux
		}
		secret = string(key)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("berth ui session v2\x00" + scope))
	if now == nil {
		now = time.Now
	}
	return &UISessions{Cookie: cookie, key: m.Sum(nil), now: now}
}

// Start is a new session's cookie value and its expiry.
func (s *UISessions) Start() (string, time.Time) {
	payload := make([]byte, sessionIDLen+8)
	if _, err := rand.Read(payload[:sessionIDLen]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	expires := s.now().Add(UISessionTTL).Truncate(time.Second)
	binary.BigEndian.PutUint64(payload[sessionIDLen:], uint64(expires.Unix()))
	enc := base64.RawURLEncoding
	return sessionPrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(s.mac(payload)), expires
}

func (s *UISessions) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return m.Sum(nil)
}

// errNoSession: a value that is no session of this scope, or no longer one.
var errNoSession = errors.New("no valid session")

// sessionValue is what a session's value says once its signature and expiry
// are checked.
type sessionValue struct {
	ID      string
	Expires time.Time
	// Tenant is the tenant whose session it is, "" for an operator's.
	Tenant string
	bind   []byte // a tenant's: its token's binding (tenantsession.go)
}

// Parse checks value's signature and expiry (not whether it was signed
// out, nor, for a tenant's, whether the tenant is still there) and
// returns its id and expiry.
func (s *UISessions) Parse(value string) (id string, expires time.Time, err error) {
	ss, err := s.parse(value)
	return ss.ID, ss.Expires, err
}

func (s *UISessions) parse(value string) (sessionValue, error) {
	if strings.HasPrefix(value, tenantSessionPrefix) {
		return s.parseTenant(value)
	}
	rest, ok := strings.CutPrefix(value, sessionPrefix)
	p, sig, ok2 := strings.Cut(rest, ".")
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(sig)
	if !ok || !ok2 || err1 != nil || err2 != nil || len(payload) != sessionIDLen+8 || !hmac.Equal(mac, s.mac(payload)) {
		return sessionValue{}, errNoSession
	}
	return s.live(payload)
}

// live is the session of a signed payload (its id, then its expiry),
// unless it has expired.
func (s *UISessions) live(payload []byte) (sessionValue, error) {
	expires := time.Unix(int64(binary.BigEndian.Uint64(payload[sessionIDLen:sessionIDLen+8])), 0)
	if !s.now().Before(expires) {
		return sessionValue{}, errNoSession
	}
	return sessionValue{ID: hex.EncodeToString(payload[:sessionIDLen]), Expires: expires}, nil
}

// Check reports whether value is a live session of this scope: signed,
// not expired, not signed out, and a tenant's only while its tenant has
// the token it signed in with.
func (s *UISessions) Check(ctx context.Context, value string) error {
	_, err := s.Verify(ctx, value)
	return err
}

// Verify is who a live session of this scope (see Check) is: an
// operator, or the tenant it was started for.
func (s *UISessions) Verify(ctx context.Context, value string) (Principal, error) {
	ss, err := s.parse(value)
	if err != nil {
		return Principal{}, err
	}
	if s.Ended != nil {
		ended, err := s.Ended(ctx, SessionRef{ID: ss.ID, Tenant: ss.Tenant, Expires: ss.Expires})
		if err != nil {
			return Principal{}, fmt.Errorf("reading the sessions ended: %w", err)
		}
		if ended {
			return Principal{}, errNoSession
		}
	}
	if ss.Tenant == "" {
		return Principal{Kind: KindOperator, Via: ViaSession}, nil
	}
	return s.verifyTenant(ctx, ss)
}

// SignOut ends the session value everywhere it is valid; a value that is
// no live session has nothing to end.
func (s *UISessions) SignOut(ctx context.Context, value string) error {
	id, expires, err := s.Parse(value)
	if err != nil || s.End == nil {
		return nil
	}
	return s.End(ctx, value, id, expires)
}

// EndedSet keeps the ids signed out until they expire, for a scope whose
// servers are one (a worker's): its Ended and End serve UISessions.
type EndedSet struct {
	mu  sync.Mutex
	ids map[string]time.Time
	now func() time.Time
}

// NewEndedSet makes an empty set; now is the clock (nil: time.Now).
func NewEndedSet(now func() time.Time) *EndedSet {
	if now == nil {
		now = time.Now
	}
	return &EndedSet{ids: map[string]time.Time{}, now: now}
}

// Ended is UISessions.Ended.
func (e *EndedSet) Ended(_ context.Context, s SessionRef) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.ids[s.ID]
	return ok, nil
}

// End is UISessions.End: it also forgets the ids that have expired.
func (e *EndedSet) End(_ context.Context, _, id string, expires time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for k, exp := range e.ids {
		if !now.Before(exp) {
			delete(e.ids, k)
		}
	}
	e.ids[id] = expires
	return nil
}

// authenticate finds an operator, or a tenant, in a UI request's session
// cookie. A cookie that is no live session, for whatever reason (garbled,
// forged, expired, signed out, its tenant gone), is no credential: the
// browser is as one that never signed in.
func (s *UISessions) authenticate(r *http.Request) (Principal, bool) {
	c, err := r.Cookie(s.Cookie)
	if err != nil {
		return Principal{}, false
	}
	p, err := s.Verify(r.Context(), c.Value)
	return p, err == nil
}
