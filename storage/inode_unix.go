//go:build unix

package storage

import (
	"os"
	"syscall"
)

// inode is the inode number of a file (see fileStamp).
func inode(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}
