package wire

import (
	"fmt"
	"strconv"
)

// The log routes (MasterAPI and WorkerAPI's ExecutorLogs and DriverLogs)
// name a stream in their path and take the tail in their query; the master
// proxies both to the worker as it got them.
const (
	LogStdout = "stdout"
	LogStderr = "stderr"
	// LogTailParam: ?tail=N answers only the last N bytes of the log.
	LogTailParam = "tail"
)

// CheckLogStream refuses a stream other than stdout and stderr.
func CheckLogStream(s string) error {
	if s != LogStdout && s != LogStderr {
		return fmt.Errorf("log stream %q: want %s or %s", s, LogStdout, LogStderr)
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
		return 0, fmt.Errorf("tail %q is not a byte count", s)
	}
	return n, nil
}
