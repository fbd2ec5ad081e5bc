package snapfile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const body = `{"epoch":3,"apps":{"app-1":{"id":"app-1","state":"WAITING"},"app-2":{"id":"app-2","state":"FINISHED"}},` +
	`"drivers":{},"workers":{"w1":{"id":"w1"}},"masters":{"m1":{"id":"m1"}},"executors":{"app-1/0":{"appId":"app-1"}},` +
	`"queues":{"etl":{"name":"etl"}},"tenants":{},"audit":[{},{}],"nextAppNumber":3,"nextDriverNumber":0}`

func sample(t *testing.T) ([]byte, Meta) {
	t.Helper()
	meta := Meta{Index: 42, Term: 3, Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), Version: "v1.2.3", Commit: "abc", Master: "m1"}
	data, sum, err := Encode(meta, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum) != 64 || !bytes.HasSuffix(data, []byte("sha256 "+sum+"\n")) {
		t.Fatalf("checksum %q at the end of %q", sum, data[len(data)-80:])
	}
	return data, meta
}

// A file reads back as written: its metadata (format and size set), its
// body, its checksum; and its counts.
func TestSnapshotFileRoundTrip(t *testing.T) {
	data, meta := sample(t)
	if !bytes.HasPrefix(data, []byte(fmt.Sprintf("berth-snapshot %d\n{", Format))) {
		t.Fatalf("file starts %q", data[:30])
	}
	got, b, err := Read(bytes.NewReader(data), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	meta.Format, meta.Size, meta.SHA256 = Format, int64(len(body)), got.SHA256
	if got != meta || string(b) != body || got.SHA256 == "" {
		t.Errorf("read %+v %q, want %+v", got, b, meta)
	}
	c, err := Count(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Epoch: 3, ActiveApps: 1, FinishedApps: 1, Workers: 1, Masters: 1, Executors: 1, Queues: 1, AuditEntries: 2, NextAppNumber: 3}
	if c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
}

// Every way a file can be bad is refused with its own error, which says
// what is wrong.
func TestSnapshotFileRefusesBadFiles(t *testing.T) {
	good, _ := sample(t)
	s := string(good)
	cur := fmt.Sprintf("berth-snapshot %d", Format)
	headerEnd := strings.Index(s, "\n") + 1 + strings.Index(s[strings.Index(s, "\n")+1:], "\n") + 1
	flip := func(at int) string {
		b := []byte(s)
		b[at] ^= 0x20
		return string(b)
	}
	for _, c := range []struct {
		name, file string
		want       error
		says       string
	}{
		{"empty", "", ErrTruncated, "empty"},
		{"a JSON file", `{"epoch":1}`, ErrForeign, "Raft snapshot"},
		{"a tarball", "\x1f\x8b\x08\x00\x00\x00\x00\x00", ErrForeign, `does not start with "berth-snapshot"`},
		{"the magic cut", "berth-sna", ErrTruncated, "first line"},
		{"a newer format", strings.Replace(s, cur, fmt.Sprintf("berth-snapshot %d", Format+1), 1), ErrNewerFormat, fmt.Sprintf("format %d", Format+1)},
		{"a format of words", strings.Replace(s, cur, "berth-snapshot one", 1), ErrCorrupt, "no format"},
		{"format 0", strings.Replace(s, cur, "berth-snapshot 0", 1), ErrCorrupt, "no format"},
		{"cut in the metadata", s[:30], ErrTruncated, "metadata"},
		{"metadata not JSON", strings.Replace(s, `{"format"`, `{"format"x`, 1), ErrCorrupt, "not JSON"},
		{"formats disagree", strings.Replace(s, fmt.Sprintf(`"format":%d`, Format), `"format":7`, 1), ErrCorrupt, "format 7"},
		{"cut in the state", s[:headerEnd+20], ErrTruncated, "ends after 20 of"},
		{"cut before the checksum", s[:len(s)-72], ErrTruncated, "before its checksum"},
		{"cut in the checksum", s[:len(s)-10], ErrTruncated, "within its checksum"},
		{"cut its last new line", s[:len(s)-1], ErrTruncated, "within its checksum"},
		{"a byte of the state flipped", flip(headerEnd + 5), ErrCorrupt, "does not match"},
		{"a byte of the metadata flipped", strings.Replace(s, `"index":42`, `"index":43`, 1), ErrCorrupt, "does not match"},
		{"checksum replaced", s[:len(s)-65] + strings.Repeat("0", 64) + "\n", ErrCorrupt, "does not match"},
		{"checksum not hex", s[:len(s)-65] + strings.Repeat("z", 64) + "\n", ErrCorrupt, "not hexadecimal"},
		{"no checksum line", s[:len(s)-72] + "md5 123\n", ErrCorrupt, "not a sha256"},
		{"data after the checksum", s + "more", ErrCorrupt, "data follows"},
		{"size too small", strings.Replace(s, fmt.Sprintf(`"size":%d`, len(body)), fmt.Sprintf(`"size":%d`, len(body)-1), 1), ErrCorrupt, "not followed by a new line"},
		{"size negative", strings.Replace(s, fmt.Sprintf(`"size":%d`, len(body)), `"size":-1`, 1), ErrCorrupt, "negative"},
		{"size huge", strings.Replace(s, fmt.Sprintf(`"size":%d`, len(body)), `"size":99999999999`, 1), ErrTooLarge, "more than"},
		{"metadata line endless", "berth-snapshot 1\n" + strings.Repeat("x", maxHeader+10), ErrCorrupt, "over"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Read(strings.NewReader(c.file), 1<<20)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Read: %v, want %v saying %q", err, c.want, c.says)
			}
		})
	}
}

// A body that is not one JSON state is corrupt, however good its envelope.
func TestSnapshotCountRefusesWhatIsNoState(t *testing.T) {
	for _, b := range []string{``, `[]`, `{"apps":5}`, `{} {}`, `{"audit":{}}`} {
		if _, err := Count([]byte(b)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Count(%q): %v, want ErrCorrupt", b, err)
		}
	}
}
