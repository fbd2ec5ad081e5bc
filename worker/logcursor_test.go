package worker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// Following a rolling log from cursor to cursor reads every byte once,
// in order, across its rolls; a cursor whose file was rolled away and
// removed rereads what is kept, and says a part was lost.
func TestLogCursorFollowsAcrossRolls(t *testing.T) {
	d, err := openRootDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, err := openRolling(d, "stdout", 20, 3, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	read := func(after *wire.LogCursor) (string, logEnd) {
		t.Helper()
		r, closeAll, end, err := openLogFrom(d, "stdout", -1, after)
		if err != nil {
			t.Fatal(err)
		}
		defer closeAll()
		s, _ := readAll(r)
		return s, end
	}
	var want, got strings.Builder
	s, end := read(nil)
	got.WriteString(s)
	for i := range 30 {
		line := fmt.Sprintf("line %02d\n", i) // 8 bytes: a roll every third line
		want.WriteString(line)
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 { // read now and then: sometimes across a roll
			s, next := read(&end.cursor)
			if next.gap {
				t.Fatalf("a gap after line %d", i)
			}
			got.WriteString(s)
			end = next
		}
	}
	s, _ = read(&end.cursor)
	got.WriteString(s)
	if got.String() != want.String() {
		t.Fatalf("followed:\n%s\nwant:\n%s", got.String(), want.String())
	}

	// A cursor into a file rolled away: what is kept, and a gap.
	old := end.cursor
	for i := range 20 {
		l.Write([]byte(fmt.Sprintf("more %02d\n", i)))
	}
	s, next := read(&old)
	if !next.gap || !strings.HasSuffix(s, "more 19\n") {
		t.Errorf("after the cursor's file went: gap %v, %q", next.gap, s)
	}
}
