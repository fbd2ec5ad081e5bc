package security

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/regularfile"
)

// `berth tls cert create --dir D` read D/ca.pem and D/ca-key.pem with no
// bound and no check of what they are: a FIFO hung it, a link to
// /dev/zero fed it without end. Both are refused at once.
func TestACertIsNotMadeFromAFIFOOrADevice(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"a FIFO":    func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"/dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		dir := t.TempDir()
		if err := CreateCA(dir); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "ca-key.pem"))
		if err := plant(filepath.Join(dir, "ca-key.pem")); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- CreateCert(dir, RoleWorker, "w1", []string{"127.0.0.1"}) }()
		select {
		case err := <-done:
			if !errors.Is(err, regularfile.ErrNotRegular) {
				t.Errorf("the CA's key %s: %v, want it refused as not a regular file", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the CA's key %s: still reading after 10 s", name) // the FIFO's open blocks for ever
		}
	}
}
