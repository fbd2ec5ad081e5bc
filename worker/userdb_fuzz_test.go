package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Whatever a local user sends, a call never panics, and a reply is one
// JSON object: an error, or a record of the range under its own name.
func FuzzNamesCall(f *testing.F) {
	for _, seed := range []string{
		`{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"uid":2003125000,"service":"io.berth.worker.2"}}`,
		`{"method":"io.systemd.UserDatabase.GetGroupRecord","parameters":{"groupName":"berth-2003125001","service":"io.berth.worker.2"}}`,
		`{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"uid":2003125000,"userName":"berth-2003125000","uidMin":1,"fuzzyNames":["b"],"dispositionMask":["dynamic"],"service":"io.berth.worker.2"},"more":true}`,
		`{"method":"io.systemd.UserDatabase.GetMemberships","parameters":{"userName":"x","service":"io.berth.worker.2"},"oneway":true}`,
		`{"method":"org.varlink.service.GetInfo"}`,
		`{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"uid":1e99,"service":"io.berth.worker.2"}}`,
		`{"method":"io.systemd.UserDatabase.GetUserRecord","parameters":{"uid":2003125000,"service":"io.berth.worker.2"},"upgrade":false}`,
		`[[[[[[[[[[[[`, `{"method":`, "\x00", "null", `{"parameters":null,"method":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	u := userdb{service: "io.berth.worker.2", lo: testLo, hi: testHi}
	f.Fuzz(func(t *testing.T, msg []byte) {
		reply, err := u.call(msg)
		if err != nil || reply == nil {
			return
		}
		if bytes.IndexByte(reply, 0) >= 0 {
			t.Fatalf("a NUL in the reply %q", reply)
		}
		var rep struct {
			Error      *string `json:"error"`
			Parameters *struct {
				Record *struct {
					UserName  string  `json:"userName"`
					GroupName string  `json:"groupName"`
					UID       *uint32 `json:"uid"`
					GID       uint32  `json:"gid"`
					Service   string  `json:"service"`
				} `json:"record"`
			} `json:"parameters"`
		}
		if err := json.Unmarshal(reply, &rep); err != nil || rep.Parameters == nil {
			t.Fatalf("reply %q: %v", reply, err)
		}
		if rep.Error != nil {
			if rep.Parameters.Record != nil || !strings.HasPrefix(*rep.Error, "io.systemd.UserDatabase.") && !strings.HasPrefix(*rep.Error, "org.varlink.service.") {
				t.Fatalf("error reply %q", reply)
			}
			return
		}
		r := rep.Parameters.Record
		if r == nil || !u.mine(r.GID) || r.Service != u.service || (r.UID != nil && *r.UID != r.GID) ||
			r.UserName+r.GroupName != identityName(r.GID) {
			t.Fatalf("record reply %q for %q", reply, msg)
		}
	})
}

// The reader of messages returns each message without its NUL, never one
// past the bound, whatever the stream.
func FuzzNamesReadMessage(f *testing.F) {
	f.Add([]byte("{}\x00{\"a\":1}\x00"), 8)
	f.Add([]byte(strings.Repeat("x", 100)+"\x00"), 64)
	f.Add([]byte("\x00\x00\x00"), 0)
	f.Fuzz(func(t *testing.T, stream []byte, limit int) {
		limit = limit & 0xffff
		r := bufio.NewReaderSize(bytes.NewReader(stream), 16)
		read := 0
		for {
			msg, err := readMessage(r, limit)
			if err != nil {
				break
			}
			if len(msg) > limit || bytes.IndexByte(msg, 0) >= 0 {
				t.Fatalf("message %q past the bound %d or with a NUL", msg, limit)
			}
			if !bytes.Equal(stream[read:read+len(msg)], msg) {
				t.Fatalf("message %q is not the stream's %q", msg, stream[read:read+len(msg)])
			}
			read += len(msg) + 1
		}
	})
}
