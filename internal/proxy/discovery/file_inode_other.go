//go:build !unix

package discovery

import "os"

// inode is unknown here; modification time and size still detect changes.
func inode(os.FileInfo) uint64 { return 0 }
