package worker

import (
	"bufio"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// The calls of systemd's io.systemd.UserDatabase Varlink interface
// (systemd's docs/USER_GROUP_API.md) for the identities of --run-as
// dynamic, which have no /etc/passwd entry: nss-systemd, glibc's NSS
// module, asks every socket in /run/systemd/userdb/ (userdb.go serves
// one), so getpwuid, `id -un` and Hadoop's login (Spark's executors)
// find a name. What is answered is a pure function of the message and of
// the slot's range: no call changes anything, and nothing but the
// range's own numbers and names is ever told.
//
// Every number of the range has a name, berth-NUMBER, user and group of
// the same name and number, whether or not an app holds it now: the
// answer then depends on nothing a tenant does (no app's existence is
// told), a process finds its name however early it asks, and a file an
// old app left in /tmp still shows one.

const (
	userdbInterface  = "io.systemd.UserDatabase"
	identityPrefix   = "berth-"
	identityRealName = "berth dynamic identity"
	// identityHome is systemd's DynamicUser's: no tenant owns a home
	// outside its process's own, which the worker gives it as $HOME;
	// Java (JDK-8280357) and others take $HOME where the record's home
	// is "/".
	identityHome  = "/"
	identityShell = "/usr/sbin/nologin"
	// A process of the range may be "dynamic", systemd's own word for
	// what it hands out to DynamicUser= units.
	identityDisposition = "dynamic"
)

// The errors answered (the UserDatabase ones, and Varlink's own).
const (
	errNoRecord         = "io.systemd.UserDatabase.NoRecordFound"
	errBadService       = "io.systemd.UserDatabase.BadService"
	errConflicting      = "io.systemd.UserDatabase.ConflictingRecordFound"
	errNonMatching      = "io.systemd.UserDatabase.NonMatchingRecordFound"
	errInvalidParameter = "org.varlink.service.InvalidParameter"
	errMethodNotFound   = "org.varlink.service.MethodNotFound"
)

// errProtocol is a message that breaks Varlink itself (not JSON, not an
// object, no method, a key Varlink does not define): the connection is
// closed without a reply, as systemd's varlink.c does.
var errProtocol = errors.New("not a Varlink method call")

// errTooLong is a message past the bound; errUnknownParameter a
// parameter the method does not take.
var (
	errTooLong          = errors.New("message too long")
	errUnknownParameter = errors.New("unknown parameter")
)

// userdb answers for one slot's identities, [lo, hi), as the service
// named service (its socket's name, which every call must repeat).
type userdb struct {
	service string
	lo, hi  uint32
}

// call answers one message (without its NUL): the reply, nil for a
// oneway call; an error ends the connection.
func (u *userdb) call(msg []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(msg, &top); err != nil || top == nil {
		return nil, errProtocol
	}
	var method string
	var params map[string]json.RawMessage
	var oneway, more, upgrade bool
	for k, v := range top {
		var err error
		switch k {
		case "method":
			err = json.Unmarshal(v, &method)
		case "parameters":
			err = json.Unmarshal(v, &params)
		case "oneway":
			err = json.Unmarshal(v, &oneway)
		case "more":
			err = json.Unmarshal(v, &more)
		case "upgrade": // newer Varlink; no upgrade is offered
			err = json.Unmarshal(v, &upgrade)
		default:
			err = errProtocol
		}
		if err != nil {
			return nil, errProtocol
		}
	}
	if method == "" || (oneway && more) || upgrade {
		return nil, errProtocol
	}
	var reply []byte
	switch method {
	case userdbInterface + ".GetUserRecord":
		reply = u.record(params, false)
	case userdbInterface + ".GetGroupRecord":
		reply = u.record(params, true)
	case userdbInterface + ".GetMemberships":
		reply = u.memberships(params)
	default:
		reply = errorReply(errMethodNotFound, map[string]string{"method": method})
	}
	if oneway {
		return nil, nil
	}
	return reply, nil
}

// query is what a GetUserRecord or GetGroupRecord asks.
type query struct {
	id                       uint32
	name, service            string
	hasID, hasName           bool
	min, max                 uint32
	hasMin, hasMax           bool
	fuzzy, dispositions      []string
	hasFuzzy, hasDisposition bool
}

// record answers GetUserRecord (group false) or GetGroupRecord.
func (u *userdb) record(params map[string]json.RawMessage, group bool) []byte {
	idKey, nameKey, minKey, maxKey := "uid", "userName", "uidMin", "uidMax"
	if group {
		idKey, nameKey, minKey, maxKey = "gid", "groupName", "gidMin", "gidMax"
	}
	var q query
	for _, k := range sortedKeys(params) {
		v := params[k]
		var err error
		switch k {
		case idKey:
			q.id, q.hasID, err = optUint32(v)
		case nameKey:
			q.name, q.hasName, err = optString(v)
		case minKey:
			q.min, q.hasMin, err = optUint32(v)
		case maxKey:
			q.max, q.hasMax, err = optUint32(v)
		case "fuzzyNames":
			q.fuzzy, q.hasFuzzy, err = optStrings(v)
		case "dispositionMask":
			q.dispositions, q.hasDisposition, err = optStrings(v)
		case "service":
			q.service, _, err = optString(v)
		default:
			err = errUnknownParameter // a filter this service does not know: say so, as the API asks
		}
		if err != nil {
			return errorReply(errInvalidParameter, map[string]string{"parameter": k})
		}
	}
	if q.service != u.service {
		return errorReply(errBadService, nil)
	}
	// An enumeration (no number, no name) finds nothing rather than the
	// 1,562,500 records of the range: NoRecordFound ends nss-systemd's
	// getpwent cleanly (ESRCH, NSS_STATUS_NOTFOUND), where
	// EnumerationNotSupported would make it fail with EOPNOTSUPP.
	id, ok := uint32(0), false
	byName, nameOK := u.parseName(q.name)
	switch {
	case q.hasID && q.hasName && u.mine(q.id) && nameOK && q.id == byName:
		id, ok = q.id, true
	case q.hasID && q.hasName && (u.mine(q.id) || nameOK):
		return errorReply(errConflicting, nil) // the number and the name are not of one record of ours
	case q.hasID && !q.hasName:
		id, ok = q.id, u.mine(q.id)
	case q.hasName && !q.hasID:
		id, ok = byName, nameOK
	}
	if !ok {
		return errorReply(errNoRecord, nil)
	}
	name := identityName(id)
	if (q.hasMin && id < q.min) || (q.hasMax && id > q.max) ||
		(q.hasDisposition && !slices.Contains(q.dispositions, identityDisposition)) ||
		(q.hasFuzzy && !fuzzyMatch(q.fuzzy, name)) {
		return errorReply(errNonMatching, nil)
	}
	if group {
		return recordReply(groupRecord{GroupName: name, GID: id, Description: identityRealName,
			Service: u.service, Disposition: identityDisposition})
	}
	return recordReply(userRecord{UserName: name, UID: id, GID: id, RealName: identityRealName,
		HomeDirectory: identityHome, Shell: identityShell, Locked: true, Service: u.service, Disposition: identityDisposition})
}

// memberships answers GetMemberships: the identities have no
// supplementary groups (the worker gives none) and no group has members.
func (u *userdb) memberships(params map[string]json.RawMessage) []byte {
	var service string
	for _, k := range sortedKeys(params) {
		var err error
		switch k {
		case "userName", "groupName":
			_, _, err = optString(params[k])
		case "service":
			service, _, err = optString(params[k])
		default:
			err = errUnknownParameter
		}
		if err != nil {
			return errorReply(errInvalidParameter, map[string]string{"parameter": k})
		}
	}
	if service != u.service {
		return errorReply(errBadService, nil)
	}
	return errorReply(errNoRecord, nil)
}

func (u *userdb) mine(id uint32) bool { return id >= u.lo && id < u.hi }

// parseName returns the number of a name of the range: berth-N, N in
// decimal as identityName writes it (no sign, no leading zero).
func (u *userdb) parseName(name string) (uint32, bool) {
	digits, ok := strings.CutPrefix(name, identityPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 32)
	if err != nil || strconv.FormatUint(n, 10) != digits || !u.mine(uint32(n)) {
		return 0, false
	}
	return uint32(n), true
}

// identityName is the user and group name of an identity.
func identityName(id uint32) string { return identityPrefix + strconv.FormatUint(uint64(id), 10) }

// fuzzyMatch: the API leaves "fuzzy" to the service; here a name given
// is a part of the record's name or real name, in any case.
func fuzzyMatch(fuzzy []string, name string) bool {
	for _, f := range fuzzy {
		f = strings.ToLower(f)
		if f != "" && (strings.Contains(name, f) || strings.Contains(identityRealName, f)) {
			return true
		}
	}
	return false
}

// userRecord and groupRecord are the JSON user and group records
// (systemd's docs/USER_RECORD.md, GROUP_RECORD.md), with the fields
// systemd's own DynamicUser service gives (src/core/core-varlink.c):
// nss-systemd refuses a record without "service".
type userRecord struct {
	UserName      string `json:"userName"`
	UID           uint32 `json:"uid"`
	GID           uint32 `json:"gid"`
	RealName      string `json:"realName"`
	HomeDirectory string `json:"homeDirectory"`
	Shell         string `json:"shell"`
	Locked        bool   `json:"locked"` // no one logs in as a tenant
	Service       string `json:"service"`
	Disposition   string `json:"disposition"`
}

type groupRecord struct {
	GroupName   string `json:"groupName"`
	GID         uint32 `json:"gid"`
	Description string `json:"description"`
	Service     string `json:"service"`
	Disposition string `json:"disposition"`
}

// recordParams are a record reply's parameters: record and incomplete
// only, as systemd 252's client refuses any other key.
type recordParams struct {
	Record     any  `json:"record"`
	Incomplete bool `json:"incomplete"` // no privileged section was left out: there is none
}

// recordReply is a reply carrying a record.
func recordReply(record any) []byte {
	data, _ := json.Marshal(struct {
		Parameters recordParams `json:"parameters"`
	}{recordParams{Record: record}})
	return data
}

// errorReply is an error reply; its parameters are an object, never
// null, as systemd sends them.
func errorReply(name string, params map[string]string) []byte {
	if params == nil {
		params = map[string]string{}
	}
	data, _ := json.Marshal(struct {
		Error      string            `json:"error"`
		Parameters map[string]string `json:"parameters"`
	}{name, params})
	return data
}

// optUint32 reads an optional number of 32 bits (null: not given). The
// message is valid JSON already (json.Unmarshal checked it whole), so
// anything but a plain integer (a string, a fraction, a sign) fails
// ParseUint.
func optUint32(v json.RawMessage) (uint32, bool, error) {
	s := strings.TrimSpace(string(v))
	if s == "null" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil, err
}

// optString reads an optional string.
func optString(v json.RawMessage) (string, bool, error) {
	var s *string
	if err := json.Unmarshal(v, &s); err != nil || s == nil {
		return "", false, err
	}
	return *s, true, nil
}

// optStrings reads an optional array of strings (null or empty: not
// given, no filter).
func optStrings(v json.RawMessage) ([]string, bool, error) {
	var s []string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, false, err
	}
	return s, len(s) > 0, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// readMessage reads one message, up to its NUL (dropped), of at most
// limit bytes: more, or an end before the NUL, is an error. Memory grows
// with what the peer sent, not with the bound.
func readMessage(r *bufio.Reader, limit int) ([]byte, error) {
	var msg []byte
	for {
		chunk, err := r.ReadSlice(0)
		if len(msg)+len(chunk) > limit+1 || (len(msg)+len(chunk) == limit+1 && err != nil) {
			return nil, errTooLong
		}
		msg = append(msg, chunk...)
		switch {
		case err == nil:
			return msg[:len(msg)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}
