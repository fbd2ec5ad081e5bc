package wire

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMasterURL(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"http://127.0.0.1:7077":      "http://127.0.0.1:7077",
		"https://m1.example:443/":    "https://m1.example:443",
		" http://[::1]:7077 ":        "http://[::1]:7077",
		"HTTP://m1:1":                "http://m1:1",
		"http://10.0.0.1":            "http://10.0.0.1:7077", // the master's default port
		"https://m1.example/":        "https://m1.example:7077",
		"http://[fe80::1%25eth0]:80": "http://[fe80::1%25eth0]:80",
	}
	for in, want := range good {
		if got, err := ParseMasterURL("--master", in); err != nil || got != want {
			t.Errorf("ParseMasterURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ftp://h:1", "http://:7077", "http://h:0", "http://h:99999", "http://h:port",
		"http://u:p@h:1", "http://h:1/?x=1", "http://h:1?", "http://h:1#f", "http://10.0.0.1:7077/api/", "http://h/v1", "/v1", "h"} {
		if got, err := ParseMasterURL("--master", in); err == nil {
			t.Errorf("ParseMasterURL(%q) = %q, want an error", in, got)
		} else if !strings.HasPrefix(err.Error(), "--master ") {
			t.Errorf("ParseMasterURL(%q): %v does not name the flag", in, err)
		}
	}
}

// A master given as host:port, without a scheme, is refused with the URL to
// write, not with net/url's "first path segment in URL cannot contain colon".
func TestParseMasterURLHintsTheScheme(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"127.0.0.1:7077", "localhost:7077", "[::1]:7077"} {
		_, err := ParseMasterURL("--master", in)
		if err == nil || !strings.Contains(err.Error(), "--master") || !strings.Contains(err.Error(), "write http://"+in) || strings.Contains(err.Error(), "first path segment") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestParseMasterURLs(t *testing.T) {
	t.Parallel()
	got, err := ParseMasterURLs("--master", " http://a:7077/ ,https://b:1,, http://a:7077,http://c")
	if want := []string{"http://a:7077", "https://b:1", "http://c:7077"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("%q %v, want %q", got, err, want)
	}
	for _, bad := range []string{"", " , ", "http://a:1,a:7077", "http://a:1,ftp://b"} {
		if _, err := ParseMasterURLs("--master", bad); err == nil || !strings.Contains(err.Error(), "--master") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
