package load

import (
	"testing"
	"time"
)

func TestCell(t *testing.T) {
	cases := map[any]string{
		0.0: "0", 0.123456: "0.12", 12.345: "12.3", 1234.5: "1234", -0.5: "-0.50",
		3: "3", "x": "x", 1500 * time.Microsecond: "1.50",
	}
	for in, want := range cases {
		if got := cell(in); got != want {
			t.Errorf("cell(%v) = %q, want %q", in, got, want)
		}
	}
}
