//go:build unix

package worker

import (
	"io/fs"
	"syscall"
)

// fileID is a file's inode, which names it across renames; 0 if unknown.
func fileID(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
