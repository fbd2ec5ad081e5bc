package worker

import (
	"hash/crc32"
	"io"
	"os"

	"github.com/berth-cluster/berth/wire"
)

// Following a log (berth logs --follow): every answer of the log API
// says where it ends (wire.LogCursorHeader), and ?after= asks for what
// the log holds past such a place. A place is an offset in one file,
// named by its inode, so that it survives the file's rolling (stdout
// renamed stdout.1 keeps its inode) and is never taken for a place in
// the file that replaced it.

// logEnd is where an answer of the log API ends, and whether part of
// the log past the cursor it was asked from was rolled away unread.
type logEnd struct {
	cursor wire.LogCursor
	gap    bool
}

// partsAfter is what files (oldest first, of sizes and ids) hold past
// after: the rest of after's file, then every newer file. When after's
// file is gone (rolled away and removed), it is all of them, and gap
// says that what lay between was lost.
func partsAfter(files []*os.File, sizes []int64, ids []uint64, after wire.LogCursor) (parts []io.Reader, gap bool) {
	from := -1
	for i, id := range ids {
		if id != 0 && id == after.File && after.Offset <= sizes[i] && sumBefore(files[i], after.Offset) == after.Sum {
			from = i
			break
		}
	}
	if from < 0 {
		for i, f := range files {
			parts = append(parts, io.NewSectionReader(f, 0, sizes[i]))
		}
		return parts, true
	}
	off := min(after.Offset, sizes[from])
	parts = append(parts, io.NewSectionReader(files[from], off, sizes[from]-off))
	for i := from + 1; i < len(files); i++ {
		parts = append(parts, io.NewSectionReader(files[i], 0, sizes[i]))
	}
	return parts, false
}

// sumWindow is how many bytes before a cursor its checksum covers.
const sumWindow = 64

// sumBefore is the checksum of the sumWindow bytes of f before off (fewer
// at its start): with the inode, what names a place in a log.
func sumBefore(f *os.File, off int64) uint32 {
	from := max(off-sumWindow, 0)
	buf := make([]byte, off-from)
	if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
		return 0
	}
	return crc32.ChecksumIEEE(buf)
}
