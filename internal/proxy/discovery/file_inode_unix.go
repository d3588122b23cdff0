//go:build unix

package discovery

import (
	"os"
	"syscall"
)

// inode tells a file replaced by rename from the same file edited in place.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
