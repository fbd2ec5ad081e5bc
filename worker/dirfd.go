package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The worker, as root, creates, opens, renames and removes files in its
// processes' directories. A tenant that could change a name on the way
// (a symlink, a hard link, a directory swapped for a link) would have root
// act on a file of its choosing: read the worker's TLS key, append to
// /etc/passwd. So every such operation goes through a dirHandle: a
// directory opened by descriptor, one component at a time, never following
// a symbolic link (O_NOFOLLOW), and every file in it is opened relative to
// that descriptor, again without following links, then checked on its
// descriptor (a regular file, made by the worker, not linked elsewhere)
// before it is used. Owners and modes are changed on descriptors, never by
// name. See docs/SECURITY.md, "What the worker does as root".

// errNotOurs: a name the worker opens is not the regular file it made.
var errNotOurs = errors.New("not a regular file made by the worker (a link, or another's file): refused")

// dirHandle is an open directory. Close it when done.
type dirHandle struct {
	f    *os.File
	path string // for messages and for the processes started in it
}

func (d *dirHandle) fd() int        { return int(d.f.Fd()) }
func (d *dirHandle) Close() error   { return d.f.Close() }
func (d *dirHandle) Path() string   { return d.path }
func (d *dirHandle) String() string { return d.path }

// openRootDir opens the work directory itself: its path is the operator's
// (--work-dir), trusted as given.
func openRootDir(path string) (*dirHandle, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &dirHandle{f: f, path: path}, nil
}

// checkName refuses a name that is not one component.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%q is not a file name", name)
	}
	return nil
}

// sub opens the directory name in d without following a link; with
// create, it makes it first (mode before the umask) if it is missing.
func (d *dirHandle) sub(name string, create bool, mode os.FileMode) (*dirHandle, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if create {
		if err := unix.Mkdirat(d.fd(), name, uint32(mode.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, &fs.PathError{Op: "mkdir", Path: filepath.Join(d.path, name), Err: err}
		}
	}
	fd, err := openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			err = errNotOurs // a link or a file where a directory should be
		}
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
	}
	path := filepath.Join(d.path, name)
	return &dirHandle{f: os.NewFile(uintptr(fd), path), path: path}, nil
}

// reopen opens d again: a descriptor of its own (its own read offset).
func (d *dirHandle) reopen() (*dirHandle, error) {
	fd, err := openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	return &dirHandle{f: os.NewFile(uintptr(fd), d.path), path: d.path}, nil
}

// walk opens the directory at the relative path names below d, component
// by component (see sub).
func (d *dirHandle) walk(create bool, mode os.FileMode, names ...string) (*dirHandle, error) {
	cur := d
	for _, name := range names {
		next, err := cur.sub(name, create, mode)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	if cur == d {
		return nil, errors.New("walk: no directory named")
	}
	return cur, nil
}

// openFile opens the regular file name in d without following a link and
// checks, on the descriptor, that it is a regular file owned by the worker
// with no other link: a file the worker made, not a tenant's hard link to
// /etc/shadow. A missing file is created with mode when flag has O_CREATE.
func (d *dirHandle) openFile(name string, flag int, mode os.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(d.path, name)
	fd, err := openat(d.fd(), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(mode.Perm()))
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = errNotOurs
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if err := checkOurs(f); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// O_NONBLOCK kept a FIFO planted under the name from blocking the
	// open; on a regular file it changes nothing, but clear it all the same.
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkOurs is openFile's check of what it opened.
func checkOurs(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Uid != uint32(os.Geteuid()) {
		return errNotOurs
	}
	return nil
}

// writeFile replaces name in d with data: written to a fresh file that no
// one else can have opened, then renamed over name (so a reader never sees
// half of it), and given to gid (-1: left alone) with mode.
func (d *dirHandle) writeFile(name string, data []byte, gid int, mode os.FileMode) error {
	tmp := ".new-" + name
	_ = unix.Unlinkat(d.fd(), tmp, 0)
	f, err := d.openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = setOwner(f, gid, mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.rename(tmp, name)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd(), tmp, 0)
		return fmt.Errorf("writing %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// rename renames old to new within d (neither followed if a link).
func (d *dirHandle) rename(old, new string) error {
	if err := errors.Join(checkName(old), checkName(new)); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), old, d.fd(), new); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(d.path, old), New: filepath.Join(d.path, new), Err: err}
	}
	return nil
}

// remove removes the file name from d (a link itself, never its target).
func (d *dirHandle) remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// exists reports whether d holds an entry name (of any kind, not followed).
func (d *dirHandle) exists(name string) bool {
	var st unix.Stat_t
	return checkName(name) == nil && unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// setOwner gives the open file or directory f to the worker's uid and
// gid (unless gid < 0), with mode, on its descriptor.
func setOwner(f *os.File, gid int, mode os.FileMode) error {
	return chown(f, os.Geteuid(), gid, mode)
}

// chown gives the open file or directory f to uid and gid (unless gid <
// 0), with mode, on its descriptor.
func chown(f *os.File, uid, gid int, mode os.FileMode) error {
	if gid >= 0 {
		if err := f.Chown(uid, gid); err != nil {
			return err
		}
	}
	return f.Chmod(mode)
}

// openat retries an open interrupted by a signal.
func openat(dirfd int, name string, flag int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flag, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
