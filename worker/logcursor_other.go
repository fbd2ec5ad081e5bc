//go:build !unix

package worker

import "io/fs"

// fileID is 0 where inodes are unknown: a cursor then never matches, and
// a follower rereads the log whole, told of a gap.
func fileID(fs.FileInfo) uint64 { return 0 }
