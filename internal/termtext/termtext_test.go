package termtext

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		// Kept: ordinary text, accents, CJK, emoji (with its zero-width
		// joiners), a literal backslash, and a valid U+FFFD.
		"":                      "",
		"pi-job 2025":           "pi-job 2025",
		"café 漢字 👩‍💻":           "café 漢字 👩‍💻",
		`C:\jobs\x1b`:           `C:\jobs\x1b`,
		"\uFFFD":                "\uFFFD",
		"\u200e\u2028 \u00a0x¡": "\u200e\u2028 \u00a0x¡", // outside the set: kept
		// C0 controls and DEL.
		"\x1b]0;pwned\x07\x1b[2J": `\x1b]0;pwned\a\x1b[2J`,
		"a\tb\nc\rd\ve\ff\bg":     `a\tb\nc\rd\ve\ff\bg`,
		"\x00\x01\x1f\x7f":        `\x00\x01\x1f\x7f`,
		// C1 controls (CSI is U+009B), written as UTF-8.
		"\u0080x\u009b2J\u009f": `\u0080x\u009b2J\u009f`,
		// Bidirectional embeddings, overrides and isolates.
		"admin\u202etxt.exe": `admin\u202etxt.exe`,
		"\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069": `\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069`,
		// Invalid UTF-8: each bad byte on its own; the valid text around kept.
		"ok\xffé\xc3": `ok\xffé\xc3`,
		"\xe2\x80":    `\xe2\x80`, // a truncated U+202E
		"\xc2\x9b":    `\u009b`,   // CSI as UTF-8 is a C1 control, not bad bytes
	} {
		got := Escape(in)
		if got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		if Safe(in) != (got == in) {
			t.Errorf("Safe(%q) = %v, but Escape changes it to %q", in, Safe(in), got)
		}
		if !Safe(got) {
			t.Errorf("Escape(%q) = %q is not Safe", in, got)
		}
	}
}

// Escape takes the string types of wire (wire.AppState...) as they are.
func TestEscapeStringType(t *testing.T) {
	type state string
	if got := Escape(state("RUNNING\x1b[2J")); got != `RUNNING\x1b[2J` {
		t.Fatalf("got %q", got)
	}
}

func TestUnsafe(t *testing.T) {
	for _, r := range []rune{0, 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0x9f, 0x202a, 0x202e, 0x2066, 0x2069} {
		if !Unsafe(r) {
			t.Errorf("Unsafe(%U) = false", r)
		}
	}
	for _, r := range []rune{' ', '~', 0xa0, 'é', '漢', 0x2029, 0x202f, 0x2065, 0x206a, 0xfffd} {
		if Unsafe(r) {
			t.Errorf("Unsafe(%U) = true", r)
		}
	}
}

// JSON keeps its meaning, loses its raw DEL, C1 and bidi characters, and
// keeps its indentation and ordinary Unicode.
func TestEscapeJSON(t *testing.T) {
	in := map[string]string{"name": "x\x7f\u009b2J\u202eé漢\x1b\n", "tab": "a\tb"}
	js, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := EscapeJSON(js)
	for _, raw := range []string{"\x7f", "\u009b", "\u202e", "\x1b"} {
		if strings.Contains(string(got), raw) {
			t.Errorf("%q still holds %q", got, raw)
		}
	}
	for _, want := range []string{`\u007f`, `\u009b`, `\u202e`, "é漢", "{\n  \"name\""} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["name"] != in["name"] || back["tab"] != in["tab"] {
		t.Fatalf("decodes to %q, %v; want %q", back, err, in)
	}
	plain := []byte(`{"a": "é"}` + "\n")
	if got := EscapeJSON(plain); &got[0] != &plain[0] {
		t.Error("JSON with nothing to escape was copied")
	}
	if got := string(EscapeJSON([]byte("\"\xff\""))); got != `"\ufffd"` {
		t.Errorf("invalid UTF-8: %q", got)
	}
}
