package worker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// Log rolling (--log-max-size, --log-max-files; Spark's
// spark.executor.logs.rolling.*). Without it a process writes its stdout and
// stderr straight into its files and they grow without bound (SPARK-36252).
// With it the process writes into a pipe and the worker copies into the file,
// which rolls once it would pass the size: stdout becomes stdout.1, stdout.1
// stdout.2, ... and the oldest beyond --log-max-files goes. The log API
// reads across them (logReader), oldest first.

// rollingLog is one stream's file, rolled by size.
type rollingLog struct {
	path string
	max  int64 // bytes per file
	keep int   // rolled files kept besides path
	gid  int   // group of new files (--run-as), -1 for none
	f    *os.File
	size int64
}

// openRolling opens path for appending, rolling at max bytes.
func openRolling(path string, max int64, keep, gid int) (*rollingLog, error) {
	l := &rollingLog{path: path, max: max, keep: keep, gid: gid}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *rollingLog) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if l.gid >= 0 {
		if err := f.Chown(0, l.gid); err != nil {
			f.Close()
			return err
		}
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Write appends p, rolling whenever the file would pass its size: p is cut
// after its last newline that fits (mid-line only when a line alone is
// longer than a file).
func (l *rollingLog) Write(p []byte) (int, error) {
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
			return written, fmt.Errorf("rolling %s: %w", l.path, err)
		}
	}
	return written, nil
}

// roll shifts path.i to path.i+1 (dropping the oldest) and path to path.1.
func (l *rollingLog) roll() error {
	if err := l.f.Close(); err != nil {
		return err
	}
	if l.keep == 0 {
		if err := os.Remove(l.path); err != nil {
			return err
		}
		return l.open()
	}
	os.Remove(rolledName(l.path, l.keep))
	for i := l.keep - 1; i >= 1; i-- {
		if err := os.Rename(rolledName(l.path, i), rolledName(l.path, i+1)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.Rename(l.path, rolledName(l.path, 1)); err != nil {
		return err
	}
	return l.open()
}

func (l *rollingLog) Close() error { return l.f.Close() }

func rolledName(path string, i int) string { return path + "." + strconv.Itoa(i) }

// logCopier copies a process's stdout and stderr pipes into their rolling
// files; wait returns once both pipes are drained (every process holding
// their write ends has exited) and the files are closed.
type logCopier struct {
	wg sync.WaitGroup
}

func (c *logCopier) copy(r *os.File, l *rollingLog) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_, _ = io.Copy(l, r)
		r.Close()
		l.Close()
	}()
}

func (c *logCopier) wait() { c.wg.Wait() }

// openLogStream opens a process's stream as one reader across its rolled
// files, oldest first, limited to its last tail bytes (all when tail < 0).
// It fails with fs.ErrNotExist when the stream has no file at all.
func openLogStream(dir, stream string, tail int64) (io.Reader, func(), error) {
	var files []*os.File
	var sizes []int64
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	base := filepath.Join(dir, stream)
	paths := []string{base}
	for i := 1; ; i++ { // rolled files are numbered without gaps
		p := rolledName(base, i)
		if _, err := os.Stat(p); err != nil {
			break
		}
		paths = append(paths, p)
	}
	slices.Reverse(paths)
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != base {
				continue // rolled away meanwhile
			}
			closeAll()
			return nil, nil, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			closeAll()
			return nil, nil, err
		}
		files, sizes = append(files, f), append(sizes, st.Size())
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
	return io.MultiReader(parts...), closeAll, nil
}

// pipeLogs routes cmd's stdout and stderr (files already opened in dir,
// which it closes) through pipes into rolling files, when --log-max-size is
// set; it returns the copier to wait for once the process ended (nil when
// logs are not rolled), and what to close once cmd has started (the write
// ends the child holds).
func (w *Worker) pipeLogs(cmd *exec.Cmd, gid int) (*logCopier, []*os.File, error) {
	if w.cfg.LogMaxSize <= 0 {
		return nil, nil, nil
	}
	c := &logCopier{}
	var childEnds []*os.File
	fail := func(err error) (*logCopier, []*os.File, error) {
		for _, f := range childEnds {
			f.Close()
		}
		return nil, nil, err
	}
	for _, out := range []*io.Writer{&cmd.Stdout, &cmd.Stderr} {
		f := (*out).(*os.File)
		l, err := openRolling(f.Name(), w.cfg.LogMaxSize, w.cfg.LogMaxFiles, gid)
		if err != nil {
			return fail(fmt.Errorf("opening %s: %w", f.Name(), err))
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
