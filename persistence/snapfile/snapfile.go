// Package snapfile is the file an operator's snapshot is kept in (berth
// operator snapshot save, inspect, restore): the cluster's state as the
// leader had applied it, with what it is, and a checksum.
//
// A file is, byte for byte:
//
//	berth-snapshot 2\n                          the magic and the format
//	{"format":2,"index":...,"size":N,...}\n     the metadata, one line of JSON
//	<N bytes: the state, as JSON>\n             the body
//	sha256 <64 hex digits>\n                    of every byte above this line
//
// Everything is checked before anything is used: a file that does not
// start with the magic is not a snapshot (ErrForeign), one of a format this
// build does not know was written by a newer berth (ErrNewerFormat), one
// that ends early is truncated (ErrTruncated), and one whose bytes do not
// add up to its checksum, or that carries anything after it, is corrupt
// (ErrCorrupt). The format number changes only when an older reader could
// not read a file right; metadata fields may be added without it.
//
// The package reads and writes the envelope only; package persistence
// decodes and checks the state inside. It imports neither Raft nor bbolt,
// so that the berth command line can inspect a file.
package snapfile

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Magic starts every snapshot file, followed by a space and the format.
const Magic = "berth-snapshot"

// Format is the newest format this build writes and reads. 2 (since
// 2026-12-04): the state may hold endedExecutors, which a reader of 1
// decodes strictly and would take for corruption; it says "newer format"
// instead. A build reads every format up to its own.
const Format = 2

// The ways a file is refused; each error wraps one.
var (
	ErrForeign     = errors.New("not a berth snapshot")
	ErrNewerFormat = errors.New("snapshot written in a newer format")
	ErrTruncated   = errors.New("snapshot truncated")
	ErrCorrupt     = errors.New("snapshot corrupt")
	ErrTooLarge    = errors.New("snapshot too large")
)

// Meta says what a snapshot holds and where it comes from.
type Meta struct {
	Format int `json:"format"`
	// Index and Term: the state is the one after the Raft log entry Index,
	// of term Term, applied (both 0 for a master that runs alone).
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// Time is when the leader took it; Version and Commit, the build of
	// that master; Master, its id.
	Time    time.Time `json:"time"`
	Version string    `json:"version"`
	Commit  string    `json:"commit,omitempty"`
	Master  string    `json:"master"`
	// Size is the body's length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the file's checksum (hex), as read from its last line: not
	// part of the metadata line.
	SHA256 string `json:"-"`
}

// Write writes a snapshot of body (the state's JSON) with meta to w;
// meta's Format and Size are set here. It returns the file's checksum.
func Write(w io.Writer, meta Meta, body []byte) (string, error) {
	meta.Format, meta.Size, meta.SHA256 = Format, int64(len(body)), ""
	header, err := json.Marshal(meta)
	if err != nil {
		return "", fmt.Errorf("encoding the snapshot's metadata: %w", err)
	}
	h := sha256.New()
	mw := io.MultiWriter(w, h)
	for _, part := range [][]byte{fmt.Appendf(nil, "%s %d\n", Magic, Format), header, []byte("\n"), body, []byte("\n")} {
		if _, err := mw.Write(part); err != nil {
			return "", fmt.Errorf("writing the snapshot: %w", err)
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if _, err := fmt.Fprintf(w, "sha256 %s\n", sum); err != nil {
		return "", fmt.Errorf("writing the snapshot: %w", err)
	}
	return sum, nil
}

// Encode is Write to memory.
func Encode(meta Meta, body []byte) ([]byte, string, error) {
	var buf bytes.Buffer
	buf.Grow(len(body) + 512)
	sum, err := Write(&buf, meta, body)
	return buf.Bytes(), sum, err
}

// maxHeader bounds the metadata line.
const maxHeader = 64 << 10

// Read reads and checks a whole snapshot from r and returns its metadata
// and body. A body over maxSize bytes is refused (ErrTooLarge) without
// being read.
func Read(r io.Reader, maxSize int64) (Meta, []byte, error) {
	br := bufio.NewReader(r)
	var meta Meta

	first, err := readLine(br, len(Magic)+16)
	switch {
	case err == io.EOF && first == "":
		return meta, nil, fmt.Errorf("%w: the file is empty", ErrTruncated)
	case err == io.EOF && strings.HasPrefix(Magic, first):
		return meta, nil, fmt.Errorf("%w: it ends within its first line", ErrTruncated)
	case !strings.HasPrefix(first, Magic+" "):
		return meta, nil, fmt.Errorf("%w: it does not start with %q (it starts with %s)%s", ErrForeign, Magic, quoteStart(first), foreignHint(first))
	case err != nil && err != errLineTooLong:
		return meta, nil, fmt.Errorf("%w: it ends within its first line", ErrTruncated)
	}
	format, perr := strconv.Atoi(strings.TrimPrefix(first, Magic+" "))
	switch {
	case err == errLineTooLong || perr != nil || format < 1:
		return meta, nil, fmt.Errorf("%w: its first line %s names no format", ErrCorrupt, quoteStart(first))
	case format > Format:
		return meta, nil, fmt.Errorf("%w: format %d, and this build of berth reads format %d at most: use the berth release that wrote it, or a later one", ErrNewerFormat, format, Format)
	}

	line, err := readLine(br, maxHeader)
	switch {
	case err == errLineTooLong:
		return meta, nil, fmt.Errorf("%w: its metadata line is over %d bytes", ErrCorrupt, maxHeader)
	case err != nil:
		return meta, nil, fmt.Errorf("%w: it ends within its metadata", ErrTruncated)
	}
	if err := json.Unmarshal([]byte(line), &meta); err != nil {
		return meta, nil, fmt.Errorf("%w: its metadata is not JSON: %w", ErrCorrupt, err)
	}
	switch {
	case meta.Format != format:
		return meta, nil, fmt.Errorf("%w: its metadata says format %d, its first line %d", ErrCorrupt, meta.Format, format)
	case meta.Size < 0:
		return meta, nil, fmt.Errorf("%w: its metadata gives a negative size", ErrCorrupt)
	case meta.Size > maxSize:
		return meta, nil, fmt.Errorf("%w: its state is %d bytes, more than the %d allowed", ErrTooLarge, meta.Size, maxSize)
	}

	// Read as it comes: a damaged size must not allocate what is not there.
	var buf bytes.Buffer
	buf.Grow(int(min(meta.Size, 64<<20)))
	if n, _ := io.Copy(&buf, io.LimitReader(br, meta.Size)); n < meta.Size {
		return meta, nil, fmt.Errorf("%w: it ends after %d of its state's %d bytes", ErrTruncated, n, meta.Size)
	}
	body := buf.Bytes()
	nl, err := br.ReadByte()
	switch {
	case err != nil:
		return meta, nil, fmt.Errorf("%w: it ends before its checksum", ErrTruncated)
	case nl != '\n':
		return meta, nil, fmt.Errorf("%w: its state is not followed by a new line where its size says it ends", ErrCorrupt)
	}
	return finish(meta, body, first, line, br)
}

// finish reads the checksum line and checks it against the bytes before
// it, rebuilt from their parts (each line was read without its "\n").
func finish(meta Meta, body []byte, first, header string, br *bufio.Reader) (Meta, []byte, error) {
	last, err := readLine(br, 80)
	switch {
	case err == errLineTooLong:
		return meta, nil, fmt.Errorf("%w: its checksum line is malformed", ErrCorrupt)
	case err == io.EOF && last == "":
		return meta, nil, fmt.Errorf("%w: it ends before its checksum", ErrTruncated)
	case err != nil:
		return meta, nil, fmt.Errorf("%w: it ends within its checksum", ErrTruncated)
	}
	got, ok := strings.CutPrefix(last, "sha256 ")
	if !ok || len(got) != sha256.Size*2 {
		return meta, nil, fmt.Errorf("%w: its last line %s is not a sha256 checksum", ErrCorrupt, quoteStart(last))
	}
	if _, err := hex.DecodeString(got); err != nil {
		return meta, nil, fmt.Errorf("%w: its checksum %s is not hexadecimal", ErrCorrupt, quoteStart(got))
	}
	if n, _ := br.Read(make([]byte, 1)); n > 0 {
		return meta, nil, fmt.Errorf("%w: data follows its checksum", ErrCorrupt)
	}
	h := sha256.New()
	for _, part := range []string{first, "\n", header, "\n"} {
		h.Write([]byte(part))
	}
	h.Write(body)
	h.Write([]byte("\n"))
	if sum := hex.EncodeToString(h.Sum(nil)); sum != got {
		return meta, nil, fmt.Errorf("%w: its checksum does not match its contents (sha256 %s, the file says %s): the file was damaged", ErrCorrupt, sum, got)
	}
	meta.SHA256 = got
	return meta, body, nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its "\n"; io.EOF (with what was read)
// when the input ends first, errLineTooLong past max bytes.
func readLine(br *bufio.Reader, max int) (string, error) {
	var b strings.Builder
	for {
		c, err := br.ReadByte()
		if err != nil {
			return b.String(), io.EOF
		}
		if c == '\n' {
			return b.String(), nil
		}
		if b.Len() >= max {
			return b.String(), errLineTooLong
		}
		b.WriteByte(c)
	}
}

// quoteStart quotes the start of s, for a message.
func quoteStart(s string) string {
	if len(s) > 24 {
		return strconv.Quote(s[:24]) + "..."
	}
	return strconv.Quote(s)
}

// foreignHint says what a foreign file may be instead.
func foreignHint(start string) string {
	if strings.HasPrefix(start, "{") {
		return "; a Raft snapshot from a master's data directory (snapshots/*/state.bin) is not one: take one with berth operator snapshot save"
	}
	return ""
}

// Counts is what a snapshot's state holds.
type Counts = wire.SnapshotCounts

// Count reads the counts of a body (the state's JSON) without decoding its
// records whole.
func Count(body []byte) (Counts, error) {
	var v struct {
		Epoch            uint64                                      `json:"epoch"`
		Apps             map[string]struct{ State wire.AppState }    `json:"apps"`
		Drivers          map[string]struct{ State wire.DriverState } `json:"drivers"`
		Workers          map[string]json.RawMessage                  `json:"workers"`
		Masters          map[string]json.RawMessage                  `json:"masters"`
		Executors        map[string]json.RawMessage                  `json:"executors"`
		Queues           map[string]json.RawMessage                  `json:"queues"`
		Tenants          map[string]json.RawMessage                  `json:"tenants"`
		Audit            []json.RawMessage                           `json:"audit"`
		NextAppNumber    int                                         `json:"nextAppNumber"`
		NextDriverNumber int                                         `json:"nextDriverNumber"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return Counts{}, fmt.Errorf("%w: its state is not JSON: %w", ErrCorrupt, err)
	}
	c := Counts{Epoch: v.Epoch, Workers: len(v.Workers), Masters: len(v.Masters), Executors: len(v.Executors),
		Queues: len(v.Queues), Tenants: len(v.Tenants), AuditEntries: len(v.Audit),
		NextAppNumber: v.NextAppNumber, NextDriverNumber: v.NextDriverNumber}
	for _, a := range v.Apps {
		if a.State.Finished() {
			c.FinishedApps++
		} else {
			c.ActiveApps++
		}
	}
	for _, d := range v.Drivers {
		if d.State.Finished() {
			c.FinishedDrivers++
		} else {
			c.ActiveDrivers++
		}
	}
	return c, nil
}
