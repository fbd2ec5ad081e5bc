package benchtool

import (
	"encoding/hex"
	"testing"
)

// A made-up secret is 128 random bits: never the same twice, never empty.
func TestSecret(t *testing.T) {
	a, b := Secret(), Secret()
	if raw, err := hex.DecodeString(a); err != nil || len(raw) != 16 {
		t.Errorf("secret %q: %d bytes, %v", a, len(raw), err)
	}
	if a == b {
		t.Errorf("two secrets are the same: %q", a)
	}
}
