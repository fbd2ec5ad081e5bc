package persistence

import "strings"

// The web UI's sessions signed out before they expired. A session is a
// signed cookie the masters keep nothing of until it is signed out; each
// sign-out is then an entry of every master's state until the session
// would have expired (12 hours). A tenant that signed in and out in a
// loop, at its ration of 20 changes a second, could keep 864,000 of them
// on every master, each sign-out scanning them all and writing the whole
// set again (bolt's meta record). So each holder (a tenant, or the
// operators) keeps at most MaxEndedSessionsPerHolder; the sign-out beyond
// ends, in one entry, every session of that holder that expires no later
// than the latest it signed out (every session it signed in before that
// one, the lifetime being the same): a signed-out session is never valid
// again, and the holder's other sessions of before end with it. A holder that does that
// signs out everywhere, which a tenant signing out a thousand times in
// twelve hours has asked for.

// MaxEndedSessionsPerHolder bounds one holder's ended sessions.
const MaxEndedSessionsPerHolder = 1000

// endedAll is the id of a holder's entry that ends all its sessions that
// expire no later than its own expiry.
const endedAll = "*"

// EndedKey is the key in State.EndedSessions of session id of holder: the
// id alone for an operator's (as kept before holders were), holder/id for
// a tenant's. Tenant names have no "/" (wire names), ids are hex.
func EndedKey(holder, id string) string {
	if holder == "" {
		return id
	}
	return holder + "/" + id
}

// holderOf is the holder of an EndedSessions key.
func holderOf(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

// SessionEnded reports whether session id of holder, expiring at expires
// (Unix seconds), was signed out.
func (s *State) SessionEnded(holder, id string, expires int64) bool {
	if _, ok := s.EndedSessions[EndedKey(holder, id)]; ok {
		return true
	}
	if _, ok := s.EndedSessions[id]; ok {
		// A tenant's sign-out written before holders were kept (by id
		// alone): still ended after the upgrade. Ids are 128 random bits:
		// no other holder's session has it.
		return true
	}
	all, ok := s.EndedSessions[EndedKey(holder, endedAll)]
	return ok && expires <= all
}

// endSession records a signed-out session until it expires, and forgets
// those expired by the time it was signed out (the command's own time, so
// every master forgets the same); beyond its holder's bound, it ends all
// the holder's sessions up to its own in one entry.
func (s *State) endSession(c Command, _ func(Key)) {
	e := *c.Session
	if s.EndedSessions == nil {
		s.EndedSessions = map[string]int64{}
	}
	held := 0
	for key, expires := range s.EndedSessions {
		switch {
		case expires <= e.At:
			delete(s.EndedSessions, key)
		case holderOf(key) == e.Holder:
			held++
		}
	}
	if e.Expires <= e.At {
		return
	}
	if held < MaxEndedSessionsPerHolder {
		s.EndedSessions[EndedKey(e.Holder, e.ID)] = e.Expires
		return
	}
	// Up to the latest expiry of those it replaces, so that none of them
	// is valid again.
	until := e.Expires
	for key, expires := range s.EndedSessions {
		if holderOf(key) == e.Holder {
			until = max(until, expires)
			delete(s.EndedSessions, key)
		}
	}
	s.EndedSessions[EndedKey(e.Holder, endedAll)] = until
}
