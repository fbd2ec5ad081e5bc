package testcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// secretMu serialises the writing of secret files: masters may be
// (re)started from several goroutines.
var secretMu sync.Mutex

// secretFile is the file holding the cluster's secret that a process run
// as uid (0: as this process) is given, as an operator would keep it:
// 0600, owned by that user. It is written the first time it is asked for;
// "" when the cluster has no secret. Masters and workers get the secret
// this way only (--secret-file, BERTH_SECRET_FILE), never in argv or their
// environment, so that every test exercises the path a real cluster
// should use; clients keep passing it as they do.
func (c *Cluster) secretFile(uid uint32) (string, error) {
	secret := c.opt.Secret
	if secret == "" {
		return "", nil
	}
	if strings.TrimSpace(secret) != secret || strings.Contains(secret, "\n") {
		return "", errors.New("testcluster: a secret with surrounding spaces or a newline cannot be given through a file (its first line, trimmed)")
	}
	name := "secret"
	if uid != 0 {
		name = fmt.Sprintf("secret-uid%d", uid) // only uid may read it
	}
	path := filepath.Join(c.opt.Dir, name)
	secretMu.Lock()
	defer secretMu.Unlock()
	if data, err := os.ReadFile(path); err == nil && string(data) == secret+"\n" {
		return path, nil
	}
	// Made anew rather than rewritten, so that it has 0600 whatever a file
	// of that name had.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("secret file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	_, err = f.WriteString(secret + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && uid != 0 {
		err = os.Chown(path, int(uid), int(uid))
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("secret file %s: %w", path, err)
	}
	return path, nil
}
