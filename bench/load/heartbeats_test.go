package load

import (
	"slices"
	"testing"
)

func TestParseInts(t *testing.T) {
	got, err := parseInts("workers", "1000, 5000,10000")
	if err != nil || !slices.Equal(got, []int{1000, 5000, 10000}) {
		t.Errorf("parseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-3", "1,x", ","} {
		if _, err := parseInts("workers", bad); err == nil {
			t.Errorf("parseInts(%q) accepted", bad)
		}
	}
}
