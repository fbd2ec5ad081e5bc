package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// userdbTestDir is a names' directory of the test's own (short: a socket's
// path has at most 107 bytes), never the host's /run/systemd/userdb.
func userdbTestDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "udb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// testSlot's range: the tests ask for its numbers and its neighbours'.
const testSlot = 2

var testLo, testHi = uint32(tenantIDBase + testSlot*idsPerSlot), uint32(tenantIDBase + (testSlot+1)*idsPerSlot)

// startNames serves testSlot's names in dir, stopped at the test's end.
func startNames(t *testing.T, dir string) *nameServer {
	t.Helper()
	s, err := serveNames(context.Background(), slog.New(slog.DiscardHandler), dir, testSlot, testLo, testHi)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// vlReply is a Varlink reply as a client reads it.
type vlReply struct {
	Parameters map[string]any `json:"parameters"`
	Error      string         `json:"error"`
	Continues  bool           `json:"continues"`
}

func dialNames(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// send writes messages, each with its NUL.
func send(t *testing.T, c net.Conn, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if _, err := c.Write(append([]byte(m), 0)); err != nil {
			t.Fatal(err)
		}
	}
}

// receive reads one reply; an error means the server closed.
func receive(c net.Conn, r *bufio.Reader) (vlReply, error) {
	var rep vlReply
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	data, err := r.ReadBytes(0)
	if err != nil {
		return rep, err
	}
	err = json.Unmarshal(data[:len(data)-1], &rep)
	return rep, err
}

// ask makes one call on a connection of its own.
func ask(t *testing.T, s *nameServer, msg string) vlReply {
	t.Helper()
	c := dialNames(t, s.path)
	send(t, c, msg)
	rep, err := receive(c, bufio.NewReader(c))
	if err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	return rep
}

// getUser is a GetUserRecord call with params and the right service.
func getUser(s *nameServer, params string) string {
	return `{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{` + params + `,"service":"` + s.db.service + `"}}`
}

func getGroup(s *nameServer, params string) string {
	return `{"method":"io.systemd.UserDatabase.GetGroupRecord","parameters":{` + params + `,"service":"` + s.db.service + `"}}`
}

func TestNamesAnswerForTheSlotsRangeOnly(t *testing.T) {
	t.Parallel()
	s := startNames(t, userdbTestDir(t))
	if got := filepath.Base(s.path); got != "io.berth.worker.2" || s.db.service != got {
		t.Fatalf("socket %s, service %s: want io.berth.worker.2 for both", s.path, s.db.service)
	}
	fi, err := os.Stat(s.path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket %v %v: want a socket 0666, as every tenant's nss-systemd must reach it", fi, err)
	}
	user := map[string]any{"userName": "berth-2003125000", "uid": 2003125000.0, "gid": 2003125000.0, "realName": "berth dynamic identity",
		"homeDirectory": "/", "shell": "/usr/sbin/nologin", "locked": true, "service": "io.berth.worker.2", "disposition": "dynamic"}
	group := map[string]any{"groupName": "berth-2003125000", "gid": 2003125000.0, "description": "berth dynamic identity",
		"service": "io.berth.worker.2", "disposition": "dynamic"}
	for _, msg := range []string{getUser(s, `"uid":2003125000`), getUser(s, `"userName":"berth-2003125000"`),
		getUser(s, `"uid":2003125000,"userName":"berth-2003125000"`)} {
		rep := ask(t, s, msg)
		if want := (vlReply{Parameters: map[string]any{"record": user, "incomplete": false}}); !reflect.DeepEqual(rep, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", msg, rep, want)
		}
	}
	for _, msg := range []string{getGroup(s, `"gid":2003125000`), getGroup(s, `"groupName":"berth-2003125000"`)} {
		rep := ask(t, s, msg)
		if want := (vlReply{Parameters: map[string]any{"record": group, "incomplete": false}}); !reflect.DeepEqual(rep, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", msg, rep, want)
		}
	}
	if rep := ask(t, s, getUser(s, `"uid":4687499`)); rep.Error != errNoRecord {
		t.Errorf("uid 4687499: %+v", rep)
	}
	if rep := ask(t, s, getUser(s, `"uid":2004687499`)); rep.Error != "" || rep.Parameters["record"].(map[string]any)["userName"] != "berth-2004687499" {
		t.Errorf("the range's last uid: %+v", rep)
	}
	notOurs := map[string]string{
		"the previous slot's last":      getUser(s, `"uid":2003124999`),
		"the next slot's first":         getUser(s, `"uid":2004687500`),
		"the next slot's first by name": getUser(s, `"userName":"berth-2004687500"`),
		"a leading zero":                getUser(s, `"userName":"berth-02003125000"`),
		"a sign":                        getUser(s, `"userName":"berth-+2003125000"`),
		"root":                          getUser(s, `"userName":"root"`),
		"uid 0":                         getUser(s, `"uid":0`),
		"a group of the next slot":      getGroup(s, `"gid":2004687500`),
		"a group not ours":              getGroup(s, `"groupName":"users"`),
		"an enumeration":                `{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"service":"io.berth.worker.2"},"more":true}`,
		"a group enumeration":           `{"method":"io.systemd.UserDatabase.GetGroupRecord","parameters":{"service":"io.berth.worker.2"},"more":true}`,
		"memberships of a user":         `{"method":"io.systemd.UserDatabase.GetMemberships","parameters":{"userName":"berth-2003125000","service":"io.berth.worker.2"},"more":true}`,
		"every membership":              `{"method":"io.systemd.UserDatabase.GetMemberships","parameters":{"service":"io.berth.worker.2"},"more":true}`,
		"both keys, neither ours":       getUser(s, `"uid":1000,"userName":"alice"`),
	}
	for what, msg := range notOurs {
		if rep := ask(t, s, msg); !reflect.DeepEqual(rep, vlReply{Error: errNoRecord, Parameters: map[string]any{}}) {
			t.Errorf("%s: %+v, want a final NoRecordFound", what, rep)
		}
	}
	for what, msg := range map[string]string{
		"uid ours, name not": getUser(s, `"uid":2003125000,"userName":"alice"`),
		"name ours, uid not": getUser(s, `"uid":1000,"userName":"berth-2003125000"`),
		"two of ours":        getUser(s, `"uid":2003125000,"userName":"berth-2003125001"`),
	} {
		if rep := ask(t, s, msg); rep.Error != errConflicting {
			t.Errorf("%s: %+v, want ConflictingRecordFound", what, rep)
		}
	}
}

func TestNamesRefuseBadCallsWithVarlinkErrors(t *testing.T) {
	t.Parallel()
	s := startNames(t, userdbTestDir(t))
	for msg, want := range map[string]vlReply{
		`{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"uid":2003125000}}`:                                    {Error: errBadService},
		`{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"uid":2003125000,"service":"io.systemd.Multiplexer"}}`: {Error: errBadService},
		`{"method":"io.systemd.UserDatabase.GetUserRecord"}`:                                                                    {Error: errBadService},
		`{"method":"io.systemd.UserDatabase.GetMemberships","parameters":{"service":"io.berth.worker.3"}}`:                      {Error: errBadService},
		getUser(s, `"uid":"2003125000"`):            {Error: errInvalidParameter, Parameters: map[string]any{"parameter": "uid"}},
		getUser(s, `"uid":-1`):                      {Error: errInvalidParameter, Parameters: map[string]any{"parameter": "uid"}},
		getUser(s, `"uid":2003125000.5`):            {Error: errInvalidParameter, Parameters: map[string]any{"parameter": "uid"}},
		getUser(s, `"uid":4294967296`):              {Error: errInvalidParameter, Parameters: map[string]any{"parameter": "uid"}},
		getUser(s, `"userName":7`):                  {Error: errInvalidParameter, Parameters: map[string]any{"parameter": "userName"}},
		getUser(s, `"uid":2003125000,"extra":true`): {Error: errInvalidParameter, Parameters: map[string]any{"parameter": "extra"}},
		getGroup(s, `"uid":2003125000`):             {Error: errInvalidParameter, Parameters: map[string]any{"parameter": "uid"}},
		`{"method":"io.systemd.UserDatabase.GetMemberships","parameters":{"userName":[],"service":"io.berth.worker.2"}}`: {Error: errInvalidParameter, Parameters: map[string]any{"parameter": "userName"}},
		`{"method":"io.systemd.UserDatabase.SetUserRecord","parameters":{}}`:                                             {Error: errMethodNotFound, Parameters: map[string]any{"method": "io.systemd.UserDatabase.SetUserRecord"}},
		`{"method":"org.varlink.service.GetInfo"}`:                                                                       {Error: errMethodNotFound, Parameters: map[string]any{"method": "org.varlink.service.GetInfo"}},
		getUser(s, `"uid":2003125000,"uidMin":2003125001`):                                                               {Error: errNonMatching},
		getUser(s, `"uid":2003125000,"uidMax":2003124999`):                                                               {Error: errNonMatching},
		getUser(s, `"uid":2003125000,"dispositionMask":["regular","system"]`):                                            {Error: errNonMatching},
		getUser(s, `"uid":2003125000,"fuzzyNames":["alice"]`):                                                            {Error: errNonMatching},
		getGroup(s, `"gid":2003125000,"gidMin":2003125001`):                                                              {Error: errNonMatching},
	} {
		if want.Parameters == nil {
			want.Parameters = map[string]any{}
		}
		if rep := ask(t, s, msg); !reflect.DeepEqual(rep, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", msg, rep, want)
		}
	}
	for _, msg := range []string{getUser(s, `"uid":2003125000,"uidMin":2003125000,"uidMax":2003125000`),
		getUser(s, `"uid":2003125000,"dispositionMask":["dynamic"],"fuzzyNames":["BERTH-2003"]`),
		getUser(s, `"uid":2003125000,"dispositionMask":[],"fuzzyNames":null,"userName":null`)} {
		if rep := ask(t, s, msg); rep.Error != "" {
			t.Errorf("%s: %+v, want the record", msg, rep)
		}
	}
}

// What breaks Varlink itself (garbage, a message past 64 KiB, an unknown
// key) ends its connection, with no reply; nothing else is hurt.
func TestNamesCloseOnGarbage(t *testing.T) {
	t.Parallel()
	s := startNames(t, userdbTestDir(t))
	huge := strings.Repeat("a", maxNameMessage+1)
	for what, msg := range map[string]string{
		"not JSON":          "not json at all",
		"empty":             "",
		"null":              "null",
		"an array":          `[{"method":"io.systemd.UserDatabase.GetUserRecord"}]`,
		"no method":         `{"parameters":{}}`,
		"a number method":   `{"method":7}`,
		"an unknown key":    getUser(s, `"uid":1`)[:len(getUser(s, `"uid":1`))-1] + `,"x":1}`,
		"oneway and more":   `{"method":"io.systemd.UserDatabase.GetUserRecord","oneway":true,"more":true}`,
		"an upgrade":        `{"method":"io.systemd.UserDatabase.GetUserRecord","upgrade":true}`,
		"parameters a list": `{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":[1]}`,
		"trailing garbage":  getUser(s, `"uid":1`) + "}",
		"past 64 KiB":       huge,
		"bad UTF-8 and NUL": "\xff\xfe{\"method\"",
	} {
		c := dialNames(t, s.path)
		_, _ = c.Write(append([]byte(msg), 0)) // the server may close before it reads it all
		if rep, err := receive(c, bufio.NewReader(c)); err == nil {
			t.Errorf("%s: answered %+v, want the connection closed", what, rep)
		}
	}
	// A message of 64 KiB exactly (spaces are JSON) is answered.
	msg := getUser(s, `"uid":2003125000`)
	if rep := ask(t, s, msg+strings.Repeat(" ", maxNameMessage-len(msg))); rep.Error != "" {
		t.Errorf("a call of 64 KiB: %+v", rep)
	}
	// Past 64 KiB without a NUL: closed without waiting for one (nor for
	// the read deadline).
	c := dialNames(t, s.path)
	_, _ = c.Write([]byte(huge + huge))
	start := time.Now()
	if _, err := receive(c, bufio.NewReader(c)); err == nil || time.Since(start) >= nameReadTimeout {
		t.Errorf("128 KiB without a NUL: %v after %v, want the connection closed at once", err, time.Since(start))
	}
}

// Calls sent together are answered in order; a oneway one is not.
func TestNamesPipelineAndOneway(t *testing.T) {
	t.Parallel()
	s := startNames(t, userdbTestDir(t))
	c := dialNames(t, s.path)
	send(t, c, `{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"uid":2003125001,"service":"io.berth.worker.2"},"oneway":true}`,
		getUser(s, `"uid":2003125002`), getGroup(s, `"gid":1`), getUser(s, `"userName":"berth-2003125003"`))
	r := bufio.NewReader(c)
	for _, want := range []string{"berth-2003125002", errNoRecord, "berth-2003125003"} {
		rep, err := receive(c, r)
		if err != nil {
			t.Fatal(err)
		}
		got := rep.Error
		if rec, ok := rep.Parameters["record"].(map[string]any); ok {
			got, _ = rec["userName"].(string)
		}
		if got != want {
			t.Errorf("reply %+v, want %s", rep, want)
		}
	}
}

// One uid may hold maxNameConnsPerUID connections; one more is closed at
// once, the others are still answered. An idle connection is closed after
// nameReadTimeout.
func TestNamesBoundTheConnectionsOfAUid(t *testing.T) {
	t.Parallel()
	s := startNames(t, userdbTestDir(t))
	idle := make([]net.Conn, maxNameConnsPerUID)
	for i := range idle {
		idle[i] = dialNames(t, s.path)
	}
	over := dialNames(t, s.path)
	_, _ = over.Write(append([]byte(getUser(s, `"uid":2003125000`)), 0))
	if rep, err := receive(over, bufio.NewReader(over)); err == nil {
		t.Errorf("connection %d of one uid answered %+v, want it closed", maxNameConnsPerUID+1, rep)
	}
	send(t, idle[0], getUser(s, `"uid":2003125000`))
	if rep, err := receive(idle[0], bufio.NewReader(idle[0])); err != nil || rep.Error != "" {
		t.Errorf("an admitted connection: %+v %v", rep, err)
	}
	start := time.Now()
	_ = idle[1].SetReadDeadline(time.Now().Add(3 * nameReadTimeout))
	if _, err := idle[1].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("an idle connection: %v, want it closed by the server", err)
	}
	if d := time.Since(start); d > 2*nameReadTimeout {
		t.Errorf("an idle connection closed after %v, want about %v", d, nameReadTimeout)
	}
	for _, c := range idle {
		c.Close()
	}
	testproc.Eventually(t, 10*time.Second, "a connection admitted again once the others closed", func() bool {
		c, err := net.Dial("unix", s.path)
		if err != nil {
			return false
		}
		defer c.Close()
		_, _ = c.Write(append([]byte(getUser(s, `"uid":2003125000`)), 0))
		rep, err := receive(c, bufio.NewReader(c))
		return err == nil && rep.Error == ""
	})
}
