package units

import "testing"

func TestParseMemoryMB(t *testing.T) {
	good := map[string]int{
		"512": 512, "512m": 512, "512M": 512, "512mb": 512, "2g": 2048, "2G": 2048,
		"2gb": 2048, "2GiB": 2048, "1.5g": 1536, "1t": 1 << 20, "2048k": 2, " 3g ": 3072,
	}
	for in, want := range good {
		got, err := ParseMemoryMB(in)
		if err != nil || got != want {
			t.Errorf("ParseMemoryMB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "g", "abc", "-1g", "0", "0.5", "512k", "NaN", "1e30g", "2x"} {
		if got, err := ParseMemoryMB(in); err == nil {
			t.Errorf("ParseMemoryMB(%q) = %d, want an error", in, got)
		}
	}
}
