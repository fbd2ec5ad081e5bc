package wire

import "testing"

// The log routes' stream and tail, as master and worker both read them.
func TestLogStreamAndTail(t *testing.T) {
	for _, s := range []string{LogStdout, LogStderr} {
		if err := CheckLogStream(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"", "stdin", "../stdout", "STDOUT"} {
		if CheckLogStream(s) == nil {
			t.Errorf("stream %q accepted", s)
		}
	}
	for in, want := range map[string]int64{"": -1, "0": 0, "4096": 4096} {
		if n, err := ParseLogTail(in); err != nil || n != want {
			t.Errorf("tail %q: %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"-1", "x", "1e3", " 5", "99999999999999999999"} {
		if _, err := ParseLogTail(in); err == nil {
			t.Errorf("tail %q accepted", in)
		}
	}
}
