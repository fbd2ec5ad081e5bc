package httpx

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// A tenant's UI session: a tenant signs in to the masters' web UI with its
// token, so that the log links Spark's UI gives its users open for them
// (docs/UI.md). Its cookie is signed as an operator's is, with the same
// key, and carries, besides its id and expiry, the tenant's name and a
// binding to the tenant's token: an HMAC of the token's hash as the
// masters keep it (TenantRecord.TokenHash). The cookie is never trusted
// for the tenant's existence: every request asks TenantToken for the hash
// the servers keep now, so a session ends as soon as its tenant is deleted
// or given another token, as the token itself does. It also expires, and
// ends at its sign-out, as an operator's does.

const (
	tenantSessionPrefix = "t1."
	tenantBindLen       = 16
	// maxTenantName bounds the name a cookie may carry: tenant names are
	// far shorter (admission), and a session value is parsed before its
	// signature is checked.
	maxTenantName = 128
)

// StartTenant is a new session of tenant name, whose token's hash, as the
// servers keep it, is tokenHash; and its expiry.
func (s *UISessions) StartTenant(name, tokenHash string) (string, time.Time) {
	payload := make([]byte, sessionIDLen+8, sessionIDLen+8+tenantBindLen+len(name))
	if _, err := rand.Read(payload[:sessionIDLen]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	expires := s.now().Add(UISessionTTL).Truncate(time.Second)
	binary.BigEndian.PutUint64(payload[sessionIDLen:], uint64(expires.Unix()))
	payload = append(payload, s.binding(name, tokenHash)...)
	payload = append(payload, name...)
	enc := base64.RawURLEncoding
	return tenantSessionPrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(s.tenantMAC(payload)), expires
}

// tenantMAC signs a tenant session's payload, apart from an operator's: an
// operator's payload signed is never taken for a tenant's, nor the reverse.
func (s *UISessions) tenantMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("tenant\x00"))
	m.Write(payload)
	return m.Sum(nil)
}

// binding ties a session to the tenant's token of the hash tokenHash
// without carrying the hash itself.
func (s *UISessions) binding(name, tokenHash string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("tenant token\x00" + name + "\x00" + tokenHash))
	return m.Sum(nil)[:tenantBindLen]
}

// parseTenant checks a tenant session's signature and expiry.
func (s *UISessions) parseTenant(value string) (sessionValue, error) {
	p, sig, ok := strings.Cut(strings.TrimPrefix(value, tenantSessionPrefix), ".")
	enc := base64.RawURLEncoding
	if !ok || len(p) > enc.EncodedLen(sessionIDLen+8+tenantBindLen+maxTenantName) {
		return sessionValue{}, errNoSession
	}
	payload, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(sig)
	head := sessionIDLen + 8 + tenantBindLen
	if err1 != nil || err2 != nil || len(payload) <= head || !hmac.Equal(mac, s.tenantMAC(payload)) {
		return sessionValue{}, errNoSession
	}
	ss, err := s.live(payload)
	if err != nil {
		return sessionValue{}, err
	}
	ss.Tenant = string(payload[head:])
	ss.bind = payload[sessionIDLen+8 : head]
	return ss, nil
}

// verifyTenant is the principal of tenant session ss if its tenant has,
// now, the token the session was started with.
func (s *UISessions) verifyTenant(ctx context.Context, ss sessionValue) (Principal, error) {
	if s.TenantToken == nil {
		return Principal{}, errNoSession
	}
	hash, err := s.TenantToken(ctx, ss.Tenant)
	if err != nil {
		return Principal{}, fmt.Errorf("checking tenant %s: %w", ss.Tenant, err)
	}
	if hash == "" || !hmac.Equal(ss.bind, s.binding(ss.Tenant, hash)) {
		return Principal{}, errNoSession
	}
	return Principal{Kind: KindTenant, Name: ss.Tenant, Tenant: ss.Tenant, Via: ViaSession}, nil
}

// Holder is who the session value names, its signature and expiry
// checked, whether or not it is still live (the zero Principal for a value
// that is no session of this scope): for the audit log's entry of its end.
func (s *UISessions) Holder(value string) Principal {
	ss, err := s.parse(value)
	switch {
	case err != nil:
		return Principal{}
	case ss.Tenant != "":
		return Principal{Kind: KindTenant, Name: ss.Tenant, Tenant: ss.Tenant, Via: ViaSession}
	}
	return Principal{Kind: KindOperator, Via: ViaSession}
}
