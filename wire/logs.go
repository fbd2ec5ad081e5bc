package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// The log routes (MasterAPI and WorkerAPI's ExecutorLogs and DriverLogs)
// name a stream in their path and take the tail in their query; the master
// proxies both to the worker as it got them.
const (
	LogStdout = "stdout"
	LogStderr = "stderr"
	// LogTailParam: ?tail=N answers only the last N bytes of the log.
	LogTailParam = "tail"
	// LogAfterParam: ?after=CURSOR answers only what the log holds past
	// CURSOR, the LogCursorHeader of an earlier answer (tail is then
	// ignored): how `berth logs --follow` reads a log as it grows, across
	// its rolled files. Every answer of a worker carries LogCursorHeader,
	// where the answer ends; LogGapHeader "true" says that part of the
	// log after the cursor was rolled away before it was read.
	LogAfterParam   = "after"
	LogCursorHeader = "Berth-Log-Cursor"
	LogGapHeader    = "Berth-Log-Gap"
)

// LogCursor is a place in a process's log: a byte offset in one of its
// files, named by the file's inode (which stays when the file is rolled,
// stdout becoming stdout.1) and a checksum of the bytes before the offset
// (an inode freed by a removed file may name a new one).
type LogCursor struct {
	File   uint64
	Offset int64
	Sum    uint32
}

func (c LogCursor) String() string { return fmt.Sprintf("%d:%d:%08x", c.File, c.Offset, c.Sum) }

// ParseLogCursor reads a LogCursor's string.
func ParseLogCursor(s string) (LogCursor, error) {
	parts := strings.Split(s, ":")
	if len(parts) == 3 {
		file, err1 := strconv.ParseUint(parts[0], 10, 64)
		off, err2 := strconv.ParseInt(parts[1], 10, 64)
		sum, err3 := strconv.ParseUint(parts[2], 16, 32)
		if err1 == nil && err2 == nil && err3 == nil && off >= 0 {
			return LogCursor{File: file, Offset: off, Sum: uint32(sum)}, nil
		}
	}
	return LogCursor{}, fmt.Errorf("log cursor %q: want FILE:OFFSET:SUM, as %s gives", clip(s), LogCursorHeader)
}

// CheckLogStream refuses a stream other than stdout and stderr.
func CheckLogStream(s string) error {
	if s != LogStdout && s != LogStderr {
		return fmt.Errorf("log stream %q: want %s or %s", clip(s), LogStdout, LogStderr)
	}
	return nil
}

// ParseLogTail reads a ?tail= value: a byte count, or -1 (the whole log)
// when it is empty.
func ParseLogTail(s string) (int64, error) {
	if s == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("tail %q is not a byte count", clip(s))
	}
	return n, nil
}
