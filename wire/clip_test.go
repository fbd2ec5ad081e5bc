package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipKeepsShortValuesAndCutsLongOnesSayingSo(t *testing.T) {
	if got := Clip("queue-a", 16); got != "queue-a" {
		t.Errorf("short value changed: %q", got)
	}
	long := strings.Repeat("a", 1<<20)
	got := Clip(long, 128)
	if len(got) > 128+40 {
		t.Errorf("clipped to %d bytes, want about 128", len(got))
	}
	if !strings.Contains(got, "…(1048448 bytes cut)…") || !strings.HasPrefix(got, strings.Repeat("a", 64)) || !strings.HasSuffix(got, strings.Repeat("a", 64)) {
		t.Errorf("clip %q: want the head, the tail and the count cut", got)
	}
	// Multi-byte runes are never split.
	for n := 1; n < 40; n++ {
		s := strings.Repeat("é日", 50)
		if got := Clip(s, n); !utf8.ValidString(got) {
			t.Fatalf("Clip(%d) split a rune: %q", n, got)
		}
	}
}
