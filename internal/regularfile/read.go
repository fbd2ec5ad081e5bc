// Package regularfile reads the files an operator or a user names (a
// configuration, a spec, a snapshot, a secret, a certificate) as files and
// nothing else: a FIFO would hang the reader in open until some writer
// came, a device such as /dev/zero would feed it without end.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is what Read says of a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Read returns the content of the regular file at path, at most max bytes:
// a FIFO, a device, a socket or a directory is refused without waiting
// (ErrNotRegular), a larger file with an error that says the bound.
func Read(path string, max int64) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return data, nil
}

// kind names what a file that is not regular is.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
