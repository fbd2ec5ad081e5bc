package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// With --run-as dynamic the worker serves the names of its slot's
// identities (userdb_proto.go) to glibc through nss-systemd: a Varlink
// socket in /run/systemd/userdb/, where nss-systemd asks every socket it
// finds (systemd's src/shared/userdb.c, userdb_start_query), as systemd
// itself does for DynamicUser= (io.systemd.DynamicUser). Without a name,
// getpwuid fails and so does whatever needs one: Hadoop's login in every
// Spark executor, Python's getpass, `id -un`, ssh.
//
// Every local user can reach the socket (0666, as systemd's), and every
// NSS lookup on the host that /etc/passwd does not answer comes here, so
// the server bounds what a peer can take: a message (maxNameMessage),
// the connections open (in all and per uid, over which a connection is
// closed at once, as systemd's varlink.c does), and the time a connection
// may hold one (a deadline per message and a lifetime). Nothing it is
// asked changes anything.

// defaultUserDBDir is where nss-systemd looks.
const defaultUserDBDir = "/run/systemd/userdb"

// userdbServicePrefix + the slot number is the socket's name, its
// service's: each worker of a host serves its own slot's range.
const userdbServicePrefix = "io.berth.worker."

const (
	maxNameMessage     = 64 << 10
	maxNameConns       = 256
	maxNameConnsPerUID = 64
	nameReadTimeout    = 5 * time.Second // nss-systemd sends its call at once
	nameWriteTimeout   = 5 * time.Second
	nameConnLifetime   = 30 * time.Second
)

// nameServer serves a userdb on a socket of its own.
type nameServer struct {
	db     userdb
	path   string
	id     socketID // so that only ours is removed
	shared bool     // another live worker had our slot's name (nameSocket)
	ln     *net.UnixListener
	log    *slog.Logger

	mu     sync.Mutex
	conns  map[*net.UnixConn]struct{}
	perUID map[uint32]int
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// serveNames serves the names of [lo, hi), slot's identities, on a
// socket in dir, made 0755 if missing.
func serveNames(ctx context.Context, log *slog.Logger, dir string, slot int, lo, hi uint32) (*nameServer, error) {
	if err := userdbDirReady(dir); err != nil {
		return nil, err
	}
	base := fmt.Sprintf("%s%d", userdbServicePrefix, slot)
	sweepStaleSockets(ctx, dir, base)
	ln, name, shared, err := nameSocket(dir, base)
	if err != nil {
		return nil, err
	}
	s := &nameServer{db: userdb{service: name, lo: lo, hi: hi}, path: filepath.Join(dir, name), shared: shared, ln: ln, log: log,
		conns: map[*net.UnixConn]struct{}{}, perUID: map[uint32]int{}, done: make(chan struct{})}
	if s.id, err = statSocketID(s.path); err != nil {
		ln.Close()
		return nil, fmt.Errorf("names' socket %s: %w", s.path, err)
	}
	s.wg.Go(s.acceptLoop)
	return s, nil
}

// userdbDirReady makes dir and its missing parents (0755 whatever the
// umask: every tenant's nss-systemd must reach it; /run/systemd is missing
// where systemd does not run), and checks that it is a directory, not a
// link, that no one but this user may write.
func userdbDirReady(dir string) error {
	if err := mkdirsReachable(dir); err != nil {
		return fmt.Errorf("names' directory %s: %w", dir, err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return fmt.Errorf("names' directory %s: %w", dir, err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("names' directory %s is not a directory (a link?)", dir)
	case int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0:
		return fmt.Errorf("names' directory %s: uid %d, mode %o: want this worker's uid %d and no one else writing it", dir, st.Uid, st.Mode&0o777, os.Geteuid())
	}
	return nil
}

// mkdirsReachable makes dir and its missing parents 0755.
func mkdirsReachable(dir string) error {
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or not ours to make: the caller's check says
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirsReachable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o755)
}

// sweepStaleSockets removes the sockets of slot base (base, base-PID)
// that no one serves: left by a worker that died before its guardian
// could remove them. Only root writes the directory, and only a refused
// connection counts as stale (a full backlog is alive).
func sweepStaleSockets(ctx context.Context, dir, base string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); (n != base && !strings.HasPrefix(n, base+"-")) || e.Type()&fs.ModeSocket == 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			_ = os.Remove(path)
		}
	}
}

// nameSocket binds dir/base (0666) and returns its listener and name.
// Where a live worker serves base already, it is a worker of the same
// slot number in another --host-dir (the sweep left a dead one's): the
// two hand out the same identities and give them the same names, so this
// one serves them too, as base-PID (shared), and keeps serving them when
// the other stops.
func nameSocket(dir, base string) (*net.UnixListener, string, bool, error) {
	ln, err := listenSocket(filepath.Join(dir, base))
	if err == nil {
		return ln, base, false, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, "", false, err
	}
	if fi, lerr := os.Lstat(filepath.Join(dir, base)); lerr == nil && fi.Mode()&fs.ModeSocket == 0 {
		return nil, "", false, fmt.Errorf("names' socket: %s is there and is not a socket (%v)", filepath.Join(dir, base), fi.Mode())
	}
	alt := fmt.Sprintf("%s-%d", base, os.Getpid())
	ln, err = listenSocket(filepath.Join(dir, alt))
	return ln, alt, true, err
}

func listenSocket(path string) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("names' socket: %w", err)
	}
	ln.SetUnlinkOnClose(false) // stop removes it, if it is still ours
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("names' socket: %w", err)
	}
	return ln, nil
}

// acceptLoop takes connections until stop, backing off on errors such as
// EMFILE rather than spinning.
func (s *nameServer) acceptLoop() {
	backoff := 5 * time.Millisecond
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Debug("names' socket: accept", "err", err)
			select {
			case <-s.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		uid, _ := peerUID(c)
		if !s.admit(c, uid) {
			s.log.Debug("names' socket: connection over the limit refused", "uid", uid)
			c.Close()
			continue
		}
		s.wg.Go(func() {
			defer s.release(c, uid)
			s.serveConn(c)
		})
	}
}

// admit counts c in, unless it is over a limit or the server stopped.
func (s *nameServer) admit(c *net.UnixConn, uid uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.conns) >= maxNameConns || s.perUID[uid] >= maxNameConnsPerUID {
		return false
	}
	s.conns[c] = struct{}{}
	s.perUID[uid]++
	return true
}

func (s *nameServer) release(c *net.UnixConn, uid uint32) {
	c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if s.perUID[uid]--; s.perUID[uid] <= 0 {
		delete(s.perUID, uid)
	}
}

// serveConn answers the calls of one connection, in order, until it ends,
// breaks the protocol, passes a bound or idles past a deadline.
func (s *nameServer) serveConn(c *net.UnixConn) {
	end := time.Now().Add(nameConnLifetime)
	r := bufio.NewReaderSize(c, 4096)
	for {
		if err := c.SetReadDeadline(earliest(time.Now().Add(nameReadTimeout), end)); err != nil {
			return
		}
		msg, err := readMessage(r, maxNameMessage)
		if err != nil {
			return
		}
		reply, err := s.db.call(msg)
		if err != nil {
			return
		}
		if reply == nil {
			continue // oneway
		}
		if err := c.SetWriteDeadline(time.Now().Add(nameWriteTimeout)); err != nil {
			return
		}
		if _, err := c.Write(append(reply, 0)); err != nil {
			return
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// stop closes the socket and every connection, waits for them, and
// removes the socket file if it is still this server's.
func (s *nameServer) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
		s.ln.Close()
		for c := range s.conns {
			c.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	removeIfSame(s.path, s.id)
}

// socketID tells a socket file from a later one of the same name: its
// device and inode, and its time of creation (bind), as ext4 gives a
// freed inode's number to the next file at once.
type socketID struct {
	dev, ino uint64
	born     int64 // mtime, ns; nothing writes a socket file
}

func statSocketID(path string) (socketID, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return socketID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return socketID{}, fmt.Errorf("%s: no inode", path)
	}
	return socketID{dev: uint64(st.Dev), ino: uint64(st.Ino), born: fi.ModTime().UnixNano()}, nil
}

// removeIfSame removes path if it is still the file id: never a socket a
// later worker of the slot put there.
func removeIfSame(path string, id socketID) {
	if now, err := statSocketID(path); err == nil && now == id {
		_ = os.Remove(path)
	}
}
