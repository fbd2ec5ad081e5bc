package worker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Log rolling (--log-max-size, --log-max-files; Spark's
// spark.executor.logs.rolling.*). Without it a process writes its stdout and
// stderr straight into its files and they grow without bound (SPARK-36252).
// With it the process writes into a pipe and the worker copies into the file,
// which rolls once it would pass the size: stdout becomes stdout.1, stdout.1
// stdout.2, ... and the oldest beyond --log-max-files goes. The log API
// reads across them (logReader), oldest first.

// rollingLog is one stream's file, rolled by size, in a process's
// directory (procdir.go: only the worker may change it).
type rollingLog struct {
	dir  *dirHandle
	name string // the stream's file name
	max  int64  // bytes per file
	keep int    // rolled files kept besides name
	gid  int    // group of new files (--run-as), -1 for none
	f    *os.File
	size int64
}

// openRolling opens the stream's file name in dir for appending, rolling
// at max bytes. It keeps a descriptor of dir of its own.
func openRolling(dir *dirHandle, name string, max int64, keep, gid int) (*rollingLog, error) {
	own, err := dir.reopen()
	if err != nil {
		return nil, err
	}
	l := &rollingLog{dir: own, name: name, max: max, keep: keep, gid: gid}
	if err := l.open(); err != nil {
		own.Close()
		return nil, err
	}
	return l, nil
}

func (l *rollingLog) open() error {
	f, err := l.dir.openFile(l.name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil {
		err = setOwner(f, l.gid, 0o640)
	}
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Write appends p, rolling whenever the file would pass its size: p is cut
// after its last newline that fits (mid-line only when a line alone is
// longer than a file).
func (l *rollingLog) Write(p []byte) (int, error) {
	if l.f == nil { // a roll failed half way (a full disk): start again
		if err := l.open(); err != nil {
			return 0, err
		}
	}
	written := 0
	for len(p) > 0 {
		room := l.max - l.size
		if int64(len(p)) <= room {
			n, err := l.f.Write(p)
			l.size += int64(n)
			return written + n, err
		}
		cut := 0
		if room > 0 {
			cut = bytes.LastIndexByte(p[:room], '\n') + 1
			if cut == 0 && l.size == 0 {
				cut = int(room) // one line longer than a file
			}
		}
		if cut > 0 {
			n, err := l.f.Write(p[:cut])
			l.size += int64(n)
			written += n
			if err != nil {
				return written, err
			}
			p = p[cut:]
		}
		if err := l.roll(); err != nil {
			return written, fmt.Errorf("rolling %s in %s: %w", l.name, l.dir, err)
		}
	}
	return written, nil
}

// roll shifts name.i to name.i+1 (dropping the oldest) and name to
// name.1, all within the directory's descriptor.
func (l *rollingLog) roll() error {
	err := l.f.Close()
	l.f = nil // reopened by open, or by the next Write if this roll fails
	if err != nil {
		return err
	}
	if l.keep == 0 {
		if err := l.dir.remove(l.name); err != nil {
			return err
		}
		return l.open()
	}
	_ = l.dir.remove(rolledName(l.name, l.keep))
	for i := l.keep - 1; i >= 1; i-- {
		if err := l.dir.rename(rolledName(l.name, i), rolledName(l.name, i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := l.dir.rename(l.name, rolledName(l.name, 1)); err != nil {
		return err
	}
	return l.open()
}

func (l *rollingLog) Close() error {
	var err error
	if l.f != nil {
		err = l.f.Close()
	}
	return errors.Join(err, l.dir.Close())
}

func rolledName(name string, i int) string { return name + "." + strconv.Itoa(i) }

// logCopier copies a process's stdout and stderr pipes into their rolling
// files; wait returns once both pipes are drained (every process holding
// their write ends has exited) and the files are closed.
type logCopier struct {
	wg      sync.WaitGroup
	readers []*os.File
}

func (c *logCopier) copy(r *os.File, l *rollingLog) {
	c.readers = append(c.readers, r)
	c.wg.Go(func() {
		_, _ = io.Copy(&keepDraining{log: l}, r)
		r.Close()
		l.Close()
	})
}

// keepDraining writes to log and, when that fails (a full disk), drops
// the output rather than stop reading: a copy that stopped would leave
// the process blocked on a full pipe, or killed by SIGPIPE, for want of
// disk space for its logs. Once writes work again, a line says how much
// was lost.
type keepDraining struct {
	log     io.Writer
	dropped int64
}

func (k *keepDraining) Write(p []byte) (int, error) {
	if k.dropped > 0 {
		note := fmt.Sprintf("\n[berth: %d bytes of output dropped: the worker could not write them]\n", k.dropped)
		if _, err := io.WriteString(k.log, note); err != nil {
			k.dropped += int64(len(p))
			return len(p), nil
		}
		k.dropped = 0
	}
	if n, err := k.log.Write(p); err != nil {
		k.dropped += int64(len(p) - n)
	}
	return len(p), nil
}

// drainGrace bounds how long a process's output is still copied once it
// and its group were killed: a process that escaped both (where no cgroup
// holds it) and kept the pipe open must not hold its end report forever.
const drainGrace = 2 * time.Second

// wait waits for the copies to end, for at most grace; then it closes the
// pipes (a writer left gets EPIPE) and waits for the copies to stop.
func (c *logCopier) wait(grace time.Duration) {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	for _, r := range c.readers {
		r.Close() // io.Copy returns: the pipe is non-blocking, so the poller wakes it
	}
	<-done
}

// openLogStream opens a process's stream in its directory dir as one
// reader across its rolled files, oldest first, limited to its last tail
// bytes (all when tail < 0). It fails with fs.ErrNotExist when the stream
// has no file at all, and refuses a name that is not a file the worker
// made (dirHandle.openFile).
func openLogStream(dir *dirHandle, stream string, tail int64) (io.Reader, func(), error) {
	r, closeAll, _, err := openLogFrom(dir, stream, tail, nil)
	return r, closeAll, err
}

// openLogFrom is openLogStream from after (nil: from the start, or the
// tail), with where the reader ends (logcursor.go).
func openLogFrom(dir *dirHandle, stream string, tail int64, after *wire.LogCursor) (io.Reader, func(), logEnd, error) {
	var files []*os.File
	var sizes []int64
	var ids []uint64
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	names := []string{stream}
	for i := 1; dir.exists(rolledName(stream, i)); i++ { // rolled files are numbered without gaps
		names = append(names, rolledName(stream, i))
	}
	slices.Reverse(names)
	for _, name := range names {
		f, err := dir.openFile(name, os.O_RDONLY, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && name != stream {
				continue // rolled away meanwhile
			}
			closeAll()
			return nil, nil, logEnd{}, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			closeAll()
			return nil, nil, logEnd{}, err
		}
		files, sizes = append(files, f), append(sizes, st.Size())
		ids = append(ids, fileID(st))
	}
	last := len(files) - 1
	end := logEnd{cursor: wire.LogCursor{File: ids[last], Offset: sizes[last], Sum: sumBefore(files[last], sizes[last])}}
	if after != nil {
		parts, gap := partsAfter(files, sizes, ids, *after)
		end.gap = gap
		return io.MultiReader(parts...), closeAll, end, nil
	}
	var total int64
	for _, s := range sizes {
		total += s
	}
	skip := int64(0)
	if tail >= 0 && total > tail {
		skip = total - tail
	}
	var parts []io.Reader
	for i, f := range files {
		if skip >= sizes[i] {
			skip -= sizes[i]
			continue
		}
		parts = append(parts, io.NewSectionReader(f, skip, sizes[i]-skip))
		skip = 0
	}
	return io.MultiReader(parts...), closeAll, end, nil
}

// pipeLogs routes cmd's stdout and stderr through pipes into rolling files
// in the process's directory d, when --log-max-size is set; it returns the
// copier to wait for once the process ended (nil when logs are not
// rolled), and what to close once cmd has started (the write ends the
// child holds).
func (w *Worker) pipeLogs(cmd *exec.Cmd, d *procDir) (*logCopier, []*os.File, error) {
	if w.cfg.LogMaxSize <= 0 {
		return nil, nil, nil
	}
	c := &logCopier{}
	var childEnds []*os.File
	fail := func(err error) (*logCopier, []*os.File, error) {
		for _, f := range childEnds {
			f.Close()
		}
		for _, r := range c.readers {
			r.Close()
		}
		return nil, nil, err
	}
	for stream, out := range map[string]*io.Writer{wire.LogStdout: &cmd.Stdout, wire.LogStderr: &cmd.Stderr} {
		l, err := openRolling(d.dirHandle, stream, w.cfg.LogMaxSize, w.cfg.LogMaxFiles, d.gid)
		if err != nil {
			return fail(fmt.Errorf("opening its %s: %w", stream, err))
		}
		r, wr, err := os.Pipe()
		if err != nil {
			l.Close()
			return fail(err)
		}
		childEnds = append(childEnds, wr)
		*out = wr
		c.copy(r, l)
	}
	return c, childEnds, nil
}
