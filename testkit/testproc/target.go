package testproc

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Target is a file only its owner may read or write, as a daemon's secret,
// its TLS key or /etc/passwd are: the file an attack aims at. It remembers
// its content, mode, owner and links, so a test can check that nothing
// touched it.
type Target struct {
	Path string
	Data string
	st   syscall.Stat_t
}

// NewTarget writes content to dir/name, mode 0600.
func NewTarget(t testing.TB, dir, name, content string) *Target {
	t.Helper()
	f := &Target{Path: filepath.Join(dir, name), Data: content}
	if err := os.WriteFile(f.Path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(f.Path, &f.st); err != nil {
		t.Fatal(err)
	}
	return f
}

// Untouched fails t if the file's content, mode, owner or link count
// changed.
func (f *Target) Untouched(t testing.TB) {
	t.Helper()
	var st syscall.Stat_t
	data, err := os.ReadFile(f.Path)
	if err == nil {
		err = syscall.Stat(f.Path, &st)
	}
	if err != nil || string(data) != f.Data || st.Mode != f.st.Mode || st.Uid != f.st.Uid || st.Gid != f.st.Gid || st.Nlink != f.st.Nlink {
		t.Errorf("%s was touched: %q mode %o owner %d:%d links %d (%v); it was %q mode %o owner %d:%d links %d",
			f.Path, data, st.Mode, st.Uid, st.Gid, st.Nlink, err, f.Data, f.st.Mode, f.st.Uid, f.st.Gid, f.st.Nlink)
	}
}
